# shellcheck shell=bash
# Stages of a long setup, for scripts/install.sh and scripts/up.sh: each
# prints one line when it starts and one with its time when it ends; the
# command's own output goes to the log file (stage_log), where a line
# starting with "==> " (a step the command reports, e.g. the template
# builder's) is also shown, with the time into the stage. A failing stage
# shows the end of the log and exits with the command's status.

STAGE_LOG=/dev/null
STAGE_T0=$SECONDS

# stage_log FILE: start a fresh log and name it.
stage_log() {
  STAGE_LOG=$1
  mkdir -p "$(dirname "$STAGE_LOG")"
  : >"$STAGE_LOG"
  stage_say "log of this run: $STAGE_LOG"
}

stage_say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }

# stage_time SECONDS: 75 -> 1m15s
stage_time() { if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

stage_cached() { stage_say "$1: already there"; }

# stage WHAT CMD...: run CMD as the stage WHAT.
stage() {
  local what=$1 t0=$SECONDS rc line
  shift
  stage_say "$what ..."
  printf '\n### %s %s: %s\n' "$(date -u +%FT%TZ)" "$what" "$*" >>"$STAGE_LOG"
  set +e
  "$@" 2>&1 | while IFS= read -r line; do
    printf '%s\n' "$line" >>"$STAGE_LOG"
    case $line in "==> "*) printf '      %s  (at %s)\n' "${line#==> }" "$(stage_time $((SECONDS - t0)))" >&2 ;; esac
  done
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    printf '\033[1m==> FAILED\033[0m %s (exit %d after %s); the end of %s:\n' "$what" "$rc" "$(stage_time $((SECONDS - t0)))" "$STAGE_LOG" >&2
    tail -n 30 "$STAGE_LOG" | sed 's/^/    /' >&2
    exit "$rc"
  fi
  printf '    done in %s (%s so far)\n' "$(stage_time $((SECONDS - t0)))" "$(stage_time $((SECONDS - STAGE_T0)))" >&2
}
