#!/usr/bin/env bash
# Multicall dispatch, --list, --install, unknown applets.
. "$CNI_TESTS/lib.sh"

out=$("$CNI_BIN" --version); t_like "--version" "$out" '^cni [0-9.]+ \(CNI spec 1\.1\.0\)$'
out=$("$CNI_BIN" --list); t_like "--list names loopback" "$out" '^loopback$'
out=$("$CNI_BIN" --help); t_like "--help lists applets with summaries" "$out" 'loopback +bring up'
"$CNI_BIN" >/dev/null 2>&1; t_is "no arguments: usage, exit 2" "$?" 2

out=$("$CNI_BIN" nosuch 2>&1); rc=$?
t_is "unknown applet exits 2" "$rc" 2
t_like "unknown applet lists what exists" "$out" "unknown applet 'nosuch'.*loopback"

d="$T_TMP/inst"
t_ok "--install creates symlinks" "$CNI_BIN" --install "$d"
t_is "symlink points at the binary" "$(readlink "$d/loopback")" "$(readlink -f "$CNI_BIN")"
n_links=$(find "$d" -type l | wc -l)
n_plugins=$("$CNI_BIN" --list | wc -l)
t_ok "one symlink per linkable applet" test "$n_links" -ge 1 -a "$n_links" -le "$n_plugins"
t_ok "--install again replaces symlinks" "$CNI_BIN" --install "$d"
rm "$d/loopback"; echo keep > "$d/loopback"
t_nok "--install refuses to overwrite a regular file" "$CNI_BIN" --install "$d"
t_is "the regular file is untouched" "$(cat "$d/loopback")" keep
t_ok "--install --force overwrites it" "$CNI_BIN" --install "$d" --force
t_ok "now a symlink" test -L "$d/loopback"
t_nok "--install without DIR is a usage error" "$CNI_BIN" --install

# The same request through a symlink and through `cni loopback`.
ns=$(t_netns cli)
conf='{"cniVersion":"1.0.0","name":"clinet","type":"loopback"}'
a=$(CNI_COMMAND=ADD CNI_NETNS=$ns CNI_IFNAME=lo CNI_CONTAINERID=c1 CNI_PATH=$T_BIN "$T_BIN/loopback" <<<"$conf")
b=$(CNI_COMMAND=ADD CNI_NETNS=$ns CNI_IFNAME=lo CNI_CONTAINERID=c1 CNI_PATH=$T_BIN "$CNI_BIN" loopback <<<"$conf")
t_is "cni loopback behaves exactly like the symlink" "$a" "$b"
out=$("$T_BIN/loopback" --help); t_like "applet --help points at its man page" "$out" 'cni-loopback\(8\)'
t_done
