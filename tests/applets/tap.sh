#!/usr/bin/env bash
# tap: a persistent tap in a container namespace, with owner, group,
# multi-queue, MTU, MAC and bridge. The applet runs inside a test namespace
# acting as the host (`ip netns exec`); nothing touches the real host.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns tap
sysfs() { ip netns exec "$C" cat "/sys/class/net/$1/$2"; }
lp_conf '{"cniVersion":"1.1.0","name":"tapnet","type":"tap",'"$(lp_ipam '"subnet":"10.200.77.0/24"')"'}'
lp_snapshot

bad() { # DESC REGEX PATCH [ARGS]: code 7 before any change
	hrun tap ADD "$contns" ttap0 c-bad "${4-}" <<<"$(conf "$3")"
	t_err "$1" 7 "$2"
}
bad "owner negative" '^owner' '{"owner":-1}'
bad "owner not a number" '^owner: expected' '{"owner":"root"}'
bad "group beyond 32 bits" '^group' '{"group":4294967296}'
bad "mtu negative" '^mtu' '{"mtu":-5}'
bad "multiQueue not a boolean" '^multiQueue' '{"multiQueue":1}'
bad "bad mac" '^mac: invalid MAC' '{"mac":"nope"}'
bad "bad CNI_ARGS MAC" '^CNI_ARGS MAC: invalid' '{}' 'MAC=1'
bad "bridge not a name" '^bridge: not a valid' '{"bridge":"a/b"}'
bad "bridge that does not exist" '^bridge: link "ttapnone" not found in the container' '{"bridge":"ttapnone"}'
bad "selinuxContext not a string" '^selinuxContext' '{"selinuxContext":7}'
lp_unchanged "bad configs"

if [ ! -e /dev/net/tun ]; then
	t_skip "tap devices" "kernel lacks tun/tap support (no /dev/net/tun)"
	t_done
fi

c=$(conf '{"owner":1000,"group":100,"multiQueue":true,"mtu":1400,"mac":"02:7a:00:00:00:01","selinuxContext":"system_u:system_r:container_t:s0"}')
lp_add tap ttap0 c1 "$c"
t_json "interface" '.interfaces[0] | "\(.name) \(.mac) \(.sandbox)"' "ttap0 02:7a:00:00:00:01 $contns"
t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "10.200.77.2/24 0"
t_like "selinuxContext ignored with a note on stderr" "$ERR" 'selinuxContext .* ignored'
t_is "owner" "$(sysfs ttap0 owner)" 1000
t_is "group" "$(sysfs ttap0 group)" 100
t_is "tap, no packet info, multi-queue" "$(( $(sysfs ttap0 tun_flags) & 0x1103 ))" $((0x1102))
d=$(ip -n "$C" -d -j link show ttap0)
t_is "MTU, MAC, up" "$(jq -r '.[0] | "\(.mtu) \(.address) \(.flags | index("UP") != null)"' <<<"$d")" \
	"1400 02:7a:00:00:00:01 true"
t_like "persistent" "$(ip -n "$C" -d link show ttap0)" 'persist on'
t_like "address applied" "$(ip -n "$C" -br addr show ttap0)" '10.200.77.2/24'
t_is "host unchanged by ADD" "$(state "$H" | head -n -1)" "$(head -n -1 <<<"$hbefore")"

lp_check_ok tap ttap0 c1 "$c"
lp_check_fails tap ttap0 c1 "$(jq -c '.owner = 1001' <<<"$c")" "CHECK reports the owner" 'owned by 1000, the config says 1001'
ip -n "$C" addr flush dev ttap0
lp_check_fails tap ttap0 c1 "$c" "CHECK reports the missing address" 'Failed to match addr 10.200.77.2/24'
lp_del tap ttap0 c1 "$c"

# No IPAM, no owner: a bare tap, up, as a port of a bridge of the container.
if ip -n "$C" link add ttapbr0 type bridge 2>/dev/null; then
	l2='{"cniVersion":"1.0.0","name":"tapl2","type":"tap","bridge":"ttapbr0"}'
	hrun tap ADD "$contns" ttap1 l2 "IgnoreUnknown=1;MAC=02:7a:00:00:00:02" <<<"$l2"
	t_is "L2 ADD with a bridge" "$RC" 0
	t_json "  MAC from CNI_ARGS, no addresses" '"\(.interfaces[0].mac) \(.ips // [] | length)"' "02:7a:00:00:00:02 0"
	t_is "  port of ttapbr0" "$(ip -n "$C" -j link show ttap1 | jq -r '.[0].master')" ttapbr0
	t_is "  no owner" "$(sysfs ttap1 owner)" -1
	hrun tap DEL "$contns" ttap1 l2 <<<"$l2"; t_is "  DEL" "$RC" 0
	t_nok "  tap gone" ip -n "$C" link show ttap1
	ip -n "$C" link del ttapbr0
else
	t_skip "tap as a bridge port" "kernel lacks bridge support"
fi

# Rollback: the route's gateway is unreachable.
lp_add_rollback tap ttap0 10.200.78.0/24 10.200.79.0/24 10.200.70.1

# An existing interface of that name is never touched.
lp_add_existing tap ttap0 ttapx 'failed to create tap ttap0'
ip -n "$C" link del ttap0

lp_del_gone tap ttap0 tapgone added
lp_finish tap ttap0
t_done
