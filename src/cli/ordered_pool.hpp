// An ordered parallel map with bounded memory: worker threads compute fn(0), fn(1), ... at most
// `window` items ahead of the consumer, which takes the results back in order. A thread that cannot
// be started is not an error: the pool runs with those it has (with none, take() computes inline).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace w4a8::cli {

template <class R>
class OrderedPool {
 public:
  OrderedPool(std::size_t count, unsigned threads, std::size_t window, std::function<R(std::size_t)> fn)
      : fn_(std::move(fn)), results_(count), window_(window ? window : 1) {
    if (threads <= 1) return;  // inline
    for (unsigned t = 0; t < threads; ++t) {
      try {
        pool_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        start_failed_ = true;
        break;
      }
    }
  }
  OrderedPool(const OrderedPool&) = delete;
  OrderedPool& operator=(const OrderedPool&) = delete;
  ~OrderedPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    more_.notify_all();
    for (auto& t : pool_) t.join();
  }

  unsigned workers() const { return unsigned(pool_.size()); }
  bool start_failed() const { return start_failed_; }

  // pre: i = 0, 1, 2, ... in order.
  R take(std::size_t i) {
    if (pool_.empty()) return fn_(i);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return results_[i].has_value(); });
    R r = std::move(*results_[i]);
    results_[i].reset();
    consumed_ = i + 1;
    lock.unlock();
    more_.notify_all();
    return r;
  }

 private:
  void work() {
    for (;;) {
      std::size_t i;
      {
        std::unique_lock<std::mutex> lock(m_);
        more_.wait(lock, [&] { return stop_ || next_ >= results_.size() || next_ < consumed_ + window_; });
        if (stop_ || next_ >= results_.size()) return;
        i = next_++;
      }
      R r = fn_(i);
      {
        std::lock_guard<std::mutex> lock(m_);
        results_[i] = std::move(r);
      }
      done_.notify_all();
    }
  }

  std::function<R(std::size_t)> fn_;
  std::vector<std::optional<R>> results_;
  std::size_t window_;
  std::vector<std::thread> pool_;
  std::mutex m_;
  std::condition_variable more_, done_;
  std::size_t next_ = 0, consumed_ = 0;
  bool stop_ = false, start_failed_ = false;
};

}  // namespace w4a8::cli
