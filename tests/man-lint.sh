#!/usr/bin/env bash
# Every man page listed in man/meson.build exists and lints clean.
set -u
dir=${CNI_TESTS:?}/../man
n=0; bad=0
for p in $(grep -oE "'[^']+\.[0-9]'" "$dir/meson.build" | tr -d "'"); do
	n=$((n + 1))
	if out=$(mandoc -T lint -W warning "$dir/$p" 2>&1) && [ -s "$dir/$p" ]; then
		echo "ok $n - man/$p"
	else
		bad=$((bad + 1)); echo "not ok $n - man/$p"; printf '%s\n' "$out" | sed 's/^/# /'
	fi
done
echo "1..$n"
[ "$bad" -eq 0 ]
