# Bash completion for ppbench: commands from `ppbench --help`, each command's
# options from `ppbench CMD --help`, suite files for arguments, `latest` for a
# proposal id (`verdict --recompute`, `report --proposal`). Installed to
# share/bash-completion/completions/ppbench; or: source scripts/ppbench-completion.bash
_ppbench() {
  local cur=${COMP_WORDS[COMP_CWORD]} ppb=${COMP_WORDS[0]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    mapfile -t COMPREPLY < <(compgen -W "$("$ppb" --help 2>/dev/null | awk '/^  [a-z]/ {print $1}')" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$("$ppb" "${COMP_WORDS[1]}" --help 2>/dev/null |
      grep -oE -- '--[a-z][a-z-]*' | sort -u) --plugin" -- "$cur")
    return
  fi
  case ${COMP_WORDS[COMP_CWORD - 1]} in
    --recompute | --proposal)
      mapfile -t COMPREPLY < <(compgen -W "latest" -- "$cur")
      return
      ;;
  esac
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _ppbench ppbench
