#!/usr/bin/env python3
"""SASS proxies of a W4A8 GEMM kernel, for a machine without a GPU.

Reads `nvdisasm -c` output of one cubin and the matching `ptxas -v` log, finds each GEMM kernel's
main k loop (the outermost backward branch whose body holds the IMMA instructions), and reports:
  - instructions per decoded weight: static instructions of one loop iteration / weights one thread
    decodes per iteration (bn * bk / threads). Conditional producer code counts on both sides of
    its branches (an upper bound); the branch-free decode + MMA part (after the cp.async commit of
    the iteration) is also reported alone;
  - bytes in flight per SM for the decode shape (M <= 16, N = K = 8192, G = 16): global bytes a block
    has requested but not consumed, times resident blocks per SM;
  - blocks per SM for N = K = 8192, M <= 16 on an H200 (132 SMs): min(occupancy from registers and
    shared memory under sm_90's limits, grid blocks / SMs rounded up).
Usage: sass_proxies.py SASS PTXAS_LOG --kernel NAME_REGEX --bn N --bk N --threads N --stages N
         --smem BYTES --stage-bytes BYTES --grid-blocks N [--pipelined] [--check-max-ipw X]
         [--check-min-bps N] [--check-min-bytes N] [--label TEXT] [--print-occupancy]
Prints one markdown table row; exits 1 when a --check bound fails, 2 when the kernel is not found.
"""
import argparse
import math
import re
import sys

SMS = 132  # H200
REGS_PER_SM, SMEM_PER_SM, SMEM_RESERVED, MAX_WARPS, MAX_BLOCKS = 65536, 233472, 1024, 64, 32


def functions(sass):
    """name -> list of (address, opcode, text) instructions and label positions."""
    out, cur = {}, None
    for line in sass.splitlines():
        m = re.match(r'\s*\.text\.(\S+):', line)
        if m:
            cur = m.group(1)
            out[cur] = {'ins': [], 'labels': {}}
            continue
        if cur is None:
            continue
        m = re.match(r'(\.L_x_\d+):', line.strip())
        if m:
            out[cur]['labels'][m.group(1)] = len(out[cur]['ins'])
            continue
        m = re.match(r'\s*/\*([0-9a-f]+)\*/\s+(.*?);', line)
        if m:
            text = m.group(2).strip()
            body = re.sub(r'^@!?U?P[T0-9]\s+', '', text)
            op = body.split()[0] if body else ''
            out[cur]['ins'].append((int(m.group(1), 16), op, text))
    return out


def main_loop(fn):
    """(start, end) instruction indices of the outermost backward branch that contains an IMMA."""
    best = None
    for i, (_, op, text) in enumerate(fn['ins']):
        if not op.startswith('BRA'):
            continue
        m = re.search(r'\(\s*(\.L_x_\d+)\s*\)', text)
        if not m or m.group(1) not in fn['labels']:
            continue
        start = fn['labels'][m.group(1)]
        if start > i:
            continue
        if any(o.startswith('IMMA') for _, o, _ in fn['ins'][start:i + 1]):
            if best is None or (i - start) > (best[1] - best[0]):
                best = (start, i)
    return best


def occupancy(regs, smem, threads):
    warps = threads // 32
    regs_per_warp = math.ceil(regs * 32 / 256) * 256
    by_regs = REGS_PER_SM // (regs_per_warp * warps)
    by_smem = SMEM_PER_SM // (smem + SMEM_RESERVED)
    return min(by_regs, by_smem, MAX_WARPS // warps, MAX_BLOCKS)


def ptxas_resources(log, regex):
    """(registers, static smem) of the first entry matching regex for sm_90a."""
    cur = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '([^']+)'", line)
        if m:
            cur = m.group(1) if re.search(regex, m.group(1)) and m.group(2) == 'sm_90a' else None
            continue
        m = re.search(r'Used (\d+) registers.*?(?:(\d+) bytes smem)?$', line)
        if cur and m:
            return int(m.group(1)), int(m.group(2) or 0)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('sass')
    ap.add_argument('ptxas_log')
    ap.add_argument('--kernel', required=True)
    ap.add_argument('--label', default='')
    for k in ('bn', 'bk', 'threads', 'stages', 'grid_blocks'):
        ap.add_argument('--' + k.replace('_', '-'), type=int, required=True)
    ap.add_argument('--smem', required=True, help='dynamic shared memory bytes of one block')
    ap.add_argument('--stage-bytes', type=int, required=True, help='global bytes one k step requests')
    ap.add_argument('--pipelined', action='store_true', help='copies of stages-1 steps are in flight')
    ap.add_argument('--check-max-ipw', type=float)
    ap.add_argument('--check-min-bps', type=int)
    ap.add_argument('--check-min-bytes', type=int)
    ap.add_argument('--print-occupancy', action='store_true', help='print resident blocks per SM only')
    a = ap.parse_args()

    funcs = functions(open(a.sass).read())
    names = [n for n in funcs if re.search(a.kernel, n)]
    if not names:
        print(f'sass_proxies: no function matches {a.kernel}', file=sys.stderr)
        return 2
    fn = funcs[names[0]]
    loop = main_loop(fn)
    res = ptxas_resources(open(a.ptxas_log).read(), a.kernel)
    if not loop or not res:
        print(f'sass_proxies: no main loop or ptxas entry for {names[0]}', file=sys.stderr)
        return 2
    body = fn['ins'][loop[0]:loop[1] + 1]
    ops = [op for _, op, _ in body]
    # The decode + MMA part: after the last cp.async commit (LDGDEPBAR) of the iteration.
    commits = [i for i, op in enumerate(ops) if op.startswith('LDGDEPBAR')]
    compute = ops[commits[-1] + 1:] if commits else ops
    weights = a.bn * a.bk / a.threads
    regs, static_smem = res
    smem = static_smem + int(a.smem)
    if a.print_occupancy:
        print(occupancy(regs, smem, a.threads))
        return 0
    blocks = min(occupancy(regs, smem, a.threads), math.ceil(a.grid_blocks / SMS))
    in_flight = a.stage_bytes * ((a.stages - 1) if a.pipelined else 1) * blocks
    count = lambda prefix: sum(op.startswith(prefix) for op in ops)
    ipw, cpw = len(ops) / weights, len(compute) / weights
    print(f'| {a.label} | {regs} | {smem} | {len(ops)} | {weights:g} | {ipw:.2f} | {cpw:.2f} | '
          f'{count("PRMT")} | {count("LDS")} | {count("LDG") + count("LDGSTS")} | {count("IMMA")} | '
          f'{count("STL") + count("LDL")} | {blocks} | {in_flight / 1024:.1f} KiB |')
    ok = True
    if a.check_max_ipw is not None and ipw > a.check_max_ipw:
        print(f'sass_proxies: {ipw:.2f} instructions per weight > {a.check_max_ipw}', file=sys.stderr)
        ok = False
    if a.check_min_bps is not None and blocks < a.check_min_bps:
        print(f'sass_proxies: {blocks} blocks per SM < {a.check_min_bps}', file=sys.stderr)
        ok = False
    if a.check_min_bytes is not None and in_flight < a.check_min_bytes:
        print(f'sass_proxies: {in_flight} bytes in flight per SM < {a.check_min_bytes}', file=sys.stderr)
        ok = False
    if count('STL') + count('LDL'):
        print('sass_proxies: local-memory traffic in the main loop', file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
