#!/usr/bin/env bash
# dummy: a dummy link in a container namespace carrying the IPAM address.
# The applet runs inside a test namespace acting as the host (`ip netns
# exec`). Config errors and DEL are tested on every kernel; ADD/CHECK of a
# live dummy only where the kernel has it, and elsewhere ADD must fail
# naming the missing support with nothing changed.
. "$CNI_TESTS/lib.sh"
export CNI_PATH="$T_BIN:/usr/lib/cni"

hostns=$(t_netns dmhost); H=${hostns##*/}
contns=$(t_netns dmcont); C=${contns##*/}

hrun() { # APPLET CMD NETNS IFNAME ID [ARGS], as cni_run, inside the host namespace
	OUT=$(ip netns exec "$H" env CNI_COMMAND="$2" CNI_NETNS="$3" CNI_IFNAME="$4" \
		CNI_CONTAINERID="$5" CNI_ARGS="${6-}" CNI_PATH="$CNI_PATH" \
		"$T_BIN/$1" 2>"$T_TMP/stderr")
	RC=$?
	ERR=$(cat "$T_TMP/stderr")
}
state() {
	ip -n "$1" -br link | awk '{print $1, $3}'
	ip -n "$1" -br addr
	ip -n "$1" route show table all | grep -v '^local\|^broadcast\|^multicast\|^fe80\|^ff00'
	ls -R "$T_TMP/ipam" 2>/dev/null | grep -cE '^[0-9a-f.:]+$'
}
ipam='"ipam":{"type":"host-local","dataDir":"'"$T_TMP/ipam"'","subnet":"10.200.76.0/24",
	"dns":{"nameservers":["10.200.76.53"]}}'
conf() { jq -c ". + ${1:-{\}}" <<<"{\"cniVersion\":\"1.1.0\",\"name\":\"dmnet\",\"type\":\"dummy\",$ipam}"; }
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
hbefore=$(state "$H"); cbefore=$(state "$C")

hrun dummy ADD "$contns" tmvdm0 c-bad <<<'{"cniVersion":"1.1.0","name":"dmnet","type":"dummy"}'
t_err "ipam is required" 7 '^ipam: missing \(a dummy interface requires an IPAM configuration\)'
hrun dummy DEL "$contns" tmvdm0 c-bad <<<'{"cniVersion":"1.1.0","name":"dmnet","type":"dummy"}'
t_err "ipam is required for DEL too" 7 '^ipam: missing'
hrun dummy ADD "$contns" tmvdm0 c-bad <<<"$(conf '{"ipam":{"subnet":"10.200.76.0/24"}}')"
t_err "ipam.type is required" 7 '^ipam.type: missing'
hrun dummy ADD "$contns" tmvdm0 c-bad <<<"$(conf '{"ipam":{"type":"../x"}}')"
t_err "ipam.type must be a plugin name" 7 'ipam.type'
t_is "bad configs left the container unchanged" "$(state "$C")" "$cbefore"

if ip -n "$H" link add tmvprobe type dummy 2>/dev/null; then
	ip -n "$H" link del tmvprobe
	have=1
else
	have=0
fi

if [ "$have" = 0 ]; then
	hrun dummy ADD "$contns" tmvdm0 c1 <<<"$(conf)"
	t_err "ADD names the missing kernel support" 999 'kernel lacks dummy support.*CONFIG_DUMMY'
	t_is "  nothing allocated or created in the container" "$(state "$C")" "$cbefore"
	t_skip "dummy ADD/CHECK/DEL of a live link" "kernel lacks dummy support (CONFIG_DUMMY)"
else
	c=$(conf)
	hrun dummy ADD "$contns" tmvdm0 c1 <<<"$c"
	t_is "ADD exits 0" "$RC" 0
	t_json "interface" '.interfaces[0] | "\(.name) \(.sandbox)"' "tmvdm0 $contns"
	t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "10.200.76.2/24 0"
	t_json "dns is the IPAM plugin's, as the reference" '.dns.nameservers[0]' 10.200.76.53
	prev=$OUT
	t_is "a dummy, up" "$(ip -n "$C" -d -j link show tmvdm0 | jq -r '.[0] | "\(.linkinfo.info_kind) \(.flags | index("UP") != null)"')" "dummy true"
	t_like "address applied" "$(ip -n "$C" -br addr show tmvdm0)" '10.200.76.2/24'
	hrun dummy CHECK "$contns" tmvdm0 c1 <<<"$(with_prev "$c" "$prev")"
	t_is "CHECK passes" "$RC:$OUT" "0:"
	ip -n "$C" link set tmvdm0 down
	hrun dummy CHECK "$contns" tmvdm0 c1 <<<"$(with_prev "$c" "$prev")"
	t_err "CHECK reports the link down" 999 'tmvdm0 is down'
	hrun dummy DEL "$contns" tmvdm0 c1 <<<"$c"
	t_is "DEL" "$RC:$OUT" "0:"
	t_is "DEL removed the link and the allocation" "$(state "$C")" "$cbefore"
fi

hrun dummy DEL "$contns" tmvdm0 c1 <<<"$(conf)"; t_is "DEL of what is not there" "$RC:$OUT" "0:"
hrun dummy DEL "$contns" tmvdm0 c1 <<<"$(conf)"; t_is "DEL again" "$RC:$OUT" "0:"
gone=$(t_netns dmgone); ip netns del "${gone##*/}"
hrun dummy DEL "$gone" tmvdm0 g1 <<<"$(conf)"; t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
hrun dummy STATUS "" "" "" <<<"$(conf)"; t_is "STATUS" "$RC:$OUT" "0:"
t_is "nothing of ours left in the container" "$(state "$C")" "$cbefore"
t_is "nothing of ours left in the host" "$(state "$H")" "$hbefore"
t_done
