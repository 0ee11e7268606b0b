# Sourced first by the project's shell scripts (`source .../ci/help.sh "$@"`): -h or --help prints
# the calling script's header comment (its lines 2.. up to the first that is not a comment) and
# exits, so asking for help never starts a build or a campaign.
case "${1:-}" in
  -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
esac
