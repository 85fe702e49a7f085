# Shared by the tests of the simple link applets (macvlan, ipvlan, vlan,
# dummy, tap, host-device), as src/linkplug.c is shared by the applets.
# Source it after lib.sh:
#
#   . "$CNI_TESTS/lib.sh"
#   . "$CNI_TESTS/applets/linkplug-lib.sh"
#   lp_netns dm                  # $hostns/$H acts as the host, $contns/$C is the container
#   lp_conf '{"cniVersion":"1.1.0","name":"dmnet","type":"dummy",'"$(lp_ipam '"subnet":"10.200.76.0/24"')"'}'
#   lp_snapshot                  # $hbefore, $cbefore
#   lp_add dummy tmvdm0 c1 "$(conf)"; ...; lp_check_ok ...; lp_del ...
#   lp_finish dummy tmvdm0; t_done
#
# The applet always runs inside $H (`ip netns exec`): nothing touches the
# real host. The IPAM plugin is host-local with its store in $T_TMP/ipam.

export CNI_PATH="$T_BIN:/usr/lib/cni"

# lp_netns SHORT: the two namespaces, cni-<tag>-SHORThost and -SHORTcont.
lp_netns() {
	hostns=$(t_netns "${1}host"); H=${hostns##*/}
	contns=$(t_netns "${1}cont"); C=${contns##*/}
}

# hrun APPLET CMD NETNS IFNAME ID [ARGS]: cni_run with the applet running
# in the host namespace of the test.
hrun() {
	OUT=$(ip netns exec "$H" env CNI_COMMAND="$2" CNI_NETNS="$3" CNI_IFNAME="$4" \
		CNI_CONTAINERID="$5" CNI_ARGS="${6-}" CNI_PATH="$CNI_PATH" \
		"$T_BIN/$1" 2>"$T_TMP/stderr")
	RC=$?
	ERR=$(cat "$T_TMP/stderr")
}
# Links, addresses and routes of a namespace, and the IPAM store.
state() {
	ip -n "$1" -br link | awk '{print $1, $3}'
	ip -n "$1" -br addr
	ip -n "$1" route show table all | grep -v '^local\|^broadcast\|^multicast\|^fe80\|^ff00'
	ls -R "$T_TMP/ipam" 2>/dev/null | grep -cE '^[0-9a-f.:]+$'
}
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
lp_snapshot() { hbefore=$(state "$H"); cbefore=$(state "$C"); }

# lp_ipam MEMBERS: an "ipam" member for host-local with the test's store
# and MEMBERS (JSON object members: '"subnet":"10.200.76.0/24"').
lp_ipam() { printf '"ipam":{"type":"host-local","dataDir":"%s",%s}' "$T_TMP/ipam" "$1"; }
# lp_conf JSON: the network config conf() patches.
lp_conf() { LP_CONF=$(jq -c . <<<"$1"); }
# conf [PATCH]: the config, with PATCH's members replacing its own.
conf() { jq -c ". + ${1:-{\}}" <<<"$LP_CONF"; }

# lp_unchanged WHAT: neither namespace changed since lp_snapshot.
lp_unchanged() {
	t_is "$1 left the host unchanged" "$(state "$H")" "$hbefore"
	t_is "$1 left the container unchanged" "$(state "$C")" "$cbefore"
}

# lp_master [CIDR GW]: the master, veth tmv0 (peer tmv0p) in $H, both up;
# with CIDR, tmv0 has that address and the default route goes via GW.
lp_master() {
	ip -n "$H" link add tmv0 type veth peer name tmv0p
	ip -n "$H" link set tmv0 up; ip -n "$H" link set tmv0p up
	[ $# -eq 0 ] && return 0
	ip -n "$H" addr add "$1" dev tmv0
	ip -n "$H" route add default via "$2" dev tmv0
}

# lp_kernel_has ARGS...: whether `ip link add NAME ARGS` works in $H.
lp_kernel_has() {
	ip -n "$H" link add tmvprobe "$@" 2>/dev/null || return 1
	ip -n "$H" link del tmvprobe
}
# lp_add_unsupported APPLET IFNAME REGEX: ADD fails naming the missing
# kernel support, with nothing changed.
lp_add_unsupported() {
	hrun "$1" ADD "$contns" "$2" c1 <<<"$(conf)"
	t_err "ADD names the missing kernel support" 999 "$3"
	t_is "  nothing allocated or created in the container" "$(state "$C")" "$cbefore"
	t_is "  host unchanged" "$(state "$H")" "$hbefore"
}

# lp_add APPLET IFNAME ID CONF [PREFIX]: ADD in $contns succeeds; its
# result is in $OUT and $prev.
lp_add() {
	hrun "$1" ADD "$contns" "$2" "$3" <<<"$4"
	t_is "${5-}ADD exits 0" "$RC" 0
	prev=$OUT
}
# lp_add_one APPLET IFNAME ID CONF ADDR: lp_add, whose result names IFNAME
# in $contns with the one address ADDR on it, and ADDR is applied.
lp_add_one() {
	lp_add "$1" "$2" "$3" "$4"
	t_json "interface" '.interfaces[0] | "\(.name) \(.sandbox)"' "$2 $contns"
	t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "$5 0"
	t_like "address applied" "$(ip -n "$C" -br addr show "$2")" "$5"
}
# lp_check_ok APPLET IFNAME ID CONF [PREFIX]: CHECK against $prev passes.
lp_check_ok() {
	hrun "$1" CHECK "$contns" "$2" "$3" <<<"$(with_prev "$4" "$prev")"
	t_is "${5-}CHECK passes" "$RC:$OUT" "0:"
}
# lp_check_fails APPLET IFNAME ID CONF DESC REGEX: CHECK against $prev
# fails (code 999) with a message matching REGEX.
lp_check_fails() {
	hrun "$1" CHECK "$contns" "$2" "$3" <<<"$(with_prev "$4" "$prev")"
	t_err "$5" 999 "$6"
}
# lp_check_missing APPLET IFNAME PATCH: CHECK of an interface prevResult
# names but the container lacks fails, with conf PATCH.
lp_check_missing() {
	local fake='{"cniVersion":"1.1.0","interfaces":[{"name":"'"$2"'","sandbox":"'"$contns"'"}],"ips":[]}'
	hrun "$1" CHECK "$contns" "$2" c1 <<<"$(with_prev "$(conf "$3")" "$fake")"
	t_err "CHECK of a missing link" 999 "interface $2 in prevResult not found"
}
# lp_del APPLET IFNAME ID CONF [PREFIX]: DEL succeeds silently, leaves the
# container as lp_snapshot found it (link and allocation gone), and
# succeeds again.
lp_del() {
	hrun "$1" DEL "$contns" "$2" "$3" <<<"$4"
	t_is "${5-}DEL exits 0, prints nothing" "$RC:$OUT" "0:"
	t_is "${5-}DEL removed the link and the allocation" "$(state "$C")" "$cbefore"
	hrun "$1" DEL "$contns" "$2" "$3" <<<"$4"
	t_is "${5-}DEL again succeeds" "$RC:$OUT" "0:"
}

# lp_add_rollback APPLET IFNAME SUBNET DST GW: an ADD whose route DST via
# the unreachable GW fails after the link and the allocation were made;
# both are undone.
lp_add_rollback() {
	hrun "$1" ADD "$contns" "$2" rb <<<"$(conf "{$(lp_ipam "\"subnet\":\"$3\",\"routes\":[{\"dst\":\"$4\",\"gw\":\"$5\"}]")}")"
	t_err "ADD failing at the routes" 999 "failed to add route $4"
	t_is "failed ADD left the container unchanged" "$(state "$C")" "$cbefore"
}
# lp_add_existing APPLET IFNAME PEER REGEX: with a veth IFNAME (peer PEER)
# already in the container, ADD fails matching REGEX, leaves the veth and
# keeps no allocation. The caller deletes the veth.
lp_add_existing() {
	ip -n "$C" link add "$2" type veth peer name "$3"
	hrun "$1" ADD "$contns" "$2" dup <<<"$(conf)"
	t_err "ADD onto an existing ifname" 999 "$4"
	t_like "  the veth is still there" "$(ip -n "$C" -d link show "$2")" 'veth'
	t_is "  no allocation kept" "$(state "$C" | tail -1)" 0
}
# lp_del_gone APPLET IFNAME SHORT [ADDED]: DEL in a namespace that is gone
# succeeds; with ADDED, after an ADD there whose allocation it releases.
lp_del_gone() {
	local gone
	gone=$(t_netns "$3")
	if [ -n "${4-}" ]; then
		hrun "$1" ADD "$gone" "$2" g1 <<<"$(conf)"
		t_is "ADD in a namespace to delete" "$RC" 0
	fi
	ip netns del "${gone##*/}"
	hrun "$1" DEL "$gone" "$2" g1 <<<"$(conf)"
	t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
	[ -z "${4-}" ] || t_is "  released the allocation" "$(state "$C" | tail -1)" 0
}
# lp_finish APPLET IFNAME [container]: DEL of an interface that is not
# there, twice, and without CNI_NETNS succeed, STATUS reaches IPAM, and
# nothing of ours is left in the container, nor (unless "container") in
# the host.
lp_finish() {
	hrun "$1" DEL "$contns" "$2" c1 <<<"$(conf)"; t_is "DEL of what is not there" "$RC:$OUT" "0:"
	hrun "$1" DEL "$contns" "$2" c1 <<<"$(conf)"; t_is "DEL again" "$RC:$OUT" "0:"
	hrun "$1" DEL "" "$2" g1 <<<"$(conf)"; t_is "DEL without CNI_NETNS" "$RC:$OUT" "0:"
	hrun "$1" STATUS "" "" "" <<<"$(conf)"; t_is "STATUS" "$RC:$OUT" "0:"
	t_is "nothing of ours left in the container" "$(state "$C")" "$cbefore"
	[ "${3-}" = container ] || t_is "nothing of ours left in the host" "$(state "$H")" "$hbefore"
}
