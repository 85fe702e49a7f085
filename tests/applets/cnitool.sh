#!/usr/bin/env bash
# cnitool: the reference cnitool's command line, typed as cnitool.md shows
# it (a ptp network with host-local in NETCONFPATH, CNI_PATH, a namespace
# under /var/run/netns), plus its environment (CNI_IFNAME, CNI_ARGS,
# CAP_ARGS), its error output, and the container id it derives, which must
# match the reference's so that both tools manage the same attachments.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/runtime/helpers.sh"

ct() { # ct ARGS...: run the cnitool symlink; sets OUT, ERR, RC
	OUT=$("$T_BIN/cnitool" "$@" 2>"$T_TMP/stderr")
	RC=$?
	ERR=$(cat "$T_TMP/stderr")
}

export NETCONFPATH=$RT_CONF
export CNI_CACHE_DIR=$RT_CACHE
unset CNI_IFNAME CNI_ARGS CAP_ARGS
if "$CNI_BIN" --list | grep -qx ptp && "$CNI_BIN" --list | grep -qx host-local; then
	export CNI_PATH=$T_BIN
elif [ -x "$RT_REF/ptp" ]; then
	export CNI_PATH=$T_BIN:$RT_REF
else
	echo "1..0 # SKIP no ptp plugin"
	exit 0
fi

cat >"$RT_CONF/10-myptp.conf" <<EOF
{"cniVersion":"0.4.0","name":"trt-myptp","type":"ptp","ipMasq":false,
 "ipam":{"type":"host-local","dataDir":"$T_TMP/ipam","subnet":"10.200.57.0/24","routes":[{"dst":"0.0.0.0/0"}]}}
EOF
t_netns testing >/dev/null
nsname=cni-$T_TAG-testing
ns=/var/run/netns/$nsname
id=$(rt_id "$ns")

ct add trt-myptp "$ns"
t_is "cnitool add myptp /var/run/netns/testing" "$RC" 0
[ "$RC" = 0 ] || t_diag "$ERR"
t_json "prints the result" '.cniVersion + " " + (.ips[0].address|split("/")[0]|split(".")[0:3]|join("."))' \
	"0.4.0 10.200.57"
ip=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
t_like "the address is on eth0 in the namespace" "$(ip -n "$nsname" -br addr show eth0)" "${ip//./\\.}"
t_ok "cached under the id cnitool derives from the netns path" test -f "$(rt_cache_file trt-myptp "$id")"
ct check trt-myptp "$ns"
t_is "cnitool check" "$RC:$OUT:$ERR" "0::"

if rt_driver; then
	out=$(CNI_CACHE_DIR=$RT_CACHE "$RT_DRV" check "$RT_CONF/10-myptp.conf" "$ns" "$id" eth0 2>&1)
	rc=$?
	t_is "libcni checks what cnitool added, by the same id" "$rc" 0
	[ "$rc" = 0 ] || t_diag "$out"
else
	t_skip "libcni checks what cnitool added" "libcni driver not built"
fi

# A relative netns path names the same attachment, as filepath.Abs does.
(cd /tmp && "$T_BIN/cnitool" del trt-myptp "../var/run/netns/./$nsname") >"$T_TMP/out" 2>&1
t_is "cnitool del with a relative path" "$?:$(cat "$T_TMP/out")" "0:"
t_nok "eth0 is gone" ip -n "$nsname" link show eth0
t_nok "the cache entry is gone" test -e "$(rt_cache_file trt-myptp "$id")"
t_nok "the address is released" rt_ip_held trt-myptp "${ip%/*}"
ct del trt-myptp "$ns"
t_is "cnitool del again" "$RC:$OUT" "0:"

CNI_IFNAME=eth5 ct add trt-myptp "$ns"
t_is "CNI_IFNAME chooses the interface" "$RC:$(jq -r '.interfaces[1].name' <<<"$OUT")" "0:eth5"
t_ok "  eth5 exists" ip -n "$nsname" link show eth5
ct del trt-myptp "$ns" -i eth5
t_is "-i IFNAME (as the cobra cnitool)" "$RC" 0
t_nok "  eth5 is gone" ip -n "$nsname" link show eth5

# CNI_ARGS and CAP_ARGS reach the plugins; errors as the reference prints them.
rec="$T_TMP/rec"
rt_recorder "$rec"
echo '{"cniVersion":"1.1.0","name":"trt-caps","plugins":[{"type":"rec1","capabilities":{"mac":true}},{"type":"rec2"}]}' \
	>"$RT_CONF/20-caps.conflist"
CNI_PATH=$rec/bin CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAME=p' CAP_ARGS='{"mac":"02:00:00:00:00:42","ips":["1.2.3.4"]}' \
	ct add trt-caps "$ns"
t_is "add with CNI_ARGS and CAP_ARGS" "$RC" 0
OUT=$(cat "$rec/rec1.ADD.json")
t_json "CAP_ARGS: declared capabilities only" '.runtimeConfig|tostring' '{"mac":"02:00:00:00:00:42"}'
t_like "CNI_ARGS reach the plugin" "$(cat "$rec/rec1.ADD.env")" 'CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=p'
CNI_PATH=$rec/bin ct status trt-caps "$ns"
t_is "cnitool status" "$RC:$OUT" "0:"
CNI_PATH=$rec/bin REC_FAIL=rec2:DEL ct del trt-caps "$ns"
t_is "a failed del exits 1 with libcni's message" "$RC:$ERR" \
	'1:plugin type="rec2" failed (delete): rec2 refuses DEL; as told'
CNI_PATH=$rec/bin ct del trt-caps "$ns"
t_is "del" "$RC" 0
CNI_PATH=$rec/bin REC_FAIL=rec1:ADD ct add trt-caps "$ns"
t_is "a failed add exits 1 with libcni's message" "$RC:$ERR" \
	'1:plugin type="rec1" failed (add): rec1 refuses ADD; as told'
t_is "  and prints nothing on stdout" "$OUT" ""
CNI_ARGS='A=1;B' ct add trt-caps "$ns"
t_is "a bad CNI_ARGS pair" "$RC:$ERR" '1:invalid CNI_ARGS pair "B"'
CAP_ARGS='not json' ct add trt-caps "$ns"
t_like "CAP_ARGS that is not JSON" "$RC:$ERR" '^1:.*JSON'
ct add trt-nothere "$ns"
t_like "an unknown network" "$RC:$ERR" '^1:no network configuration named "trt-nothere"'
ct add trt-caps
t_like "too few arguments: usage, exit 1" "$RC:$ERR" '^1:Usage'
ct frob trt-caps "$ns"
t_like "an unknown command" "$RC:$ERR" '^1:unknown command'
echo '{"cniVersion":"0.3.1","name":"trt-old","type":"rec1"}' >"$RT_CONF/30-old.conf"
CNI_PATH=$rec/bin ct check trt-old "$ns"
t_is "check of a 0.3.1 network is refused as libcni does" "$RC:$ERR" \
	'1:configuration version "0.3.1" does not support the CHECK command'

# gc: an attachment whose namespace vanished is collected.
ct add trt-myptp "$ns"
ip=$(jq -r '.ips[0].address' <<<"$OUT" 2>/dev/null)
ip netns del "$nsname"
ct gc trt-myptp "$ns"
t_is "cnitool gc after the namespace vanished" "$RC:$OUT" "0:"
t_nok "  removed the cache entry" test -e "$(rt_cache_file trt-myptp "$id")"
t_nok "  released the address" rt_ip_held trt-myptp "${ip%/*}"
t_done
