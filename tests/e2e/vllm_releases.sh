#!/usr/bin/env bash
# The released vLLM sources (scripts/fetch-vllm.sh --version, sha256-checked)
# through capture.py: each release's prefix_prefill.py read from its own tree,
# its launch bound by name (tests/e2e/vllm_capture.py, RELEASES). Needs the
# package index; without it the test is reported skipped, saying so.
source "$(dirname "$0")/lib.bash"
cache=${PPB_VLLM_RELEASES_DIR:-$(dirname "$PPB")/vllm-releases}
trees=()
for v in 0.6.3 0.10.2 0.20.0 0.34.0; do
  if ! "$SRC/scripts/fetch-vllm.sh" --version "$v" "$cache" >"$WORK/fetch.log" 2>&1; then
    if grep -q "cannot read the package index page" "$WORK/fetch.log"; then
      echo "vllm_releases: SKIPPED: the package index cannot be reached: $(tail -1 "$WORK/fetch.log")"
      exit 77
    fi
    fail "fetch-vllm.sh --version $v: $(cat "$WORK/fetch.log")"
  fi
  trees+=("$cache/vllm-$v")
done
"$PY" "$SRC/tests/e2e/vllm_capture.py" "${trees[@]}" || fail "capture.py on the releases"
echo "vllm_releases: ok"
