#!/usr/bin/env bash
# scripts/ppbench-completion.bash: commands, a command's options, files.
source "$(dirname "$0")/lib.bash"
# shellcheck source=/dev/null
source "$SRC/scripts/ppbench-completion.bash"
complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _ppbench; }
complete_words "$PPB" "pro"
[ "${COMPREPLY[*]}" = "propose" ] || fail "commands: '${COMPREPLY[*]}'"
complete_words "$PPB" "li"
[ "${COMPREPLY[*]}" = "list list-kernels" ] || fail "commands: '${COMPREPLY[*]}'"
complete_words "$PPB" run "--im"
[ "${COMPREPLY[*]}" = "--impl" ] || fail "run options: '${COMPREPLY[*]}'"
complete_words "$PPB" trend "--js"
[ "${COMPREPLY[*]}" = "--json" ] || fail "trend options: '${COMPREPLY[*]}'"
complete_words "$PPB" run "$SRC/suites/smok"
[ "${#COMPREPLY[@]}" -eq 2 ] || fail "files: '${COMPREPLY[*]}'"
echo "completion: ok"
