#!/usr/bin/env bash
# bridge: two dual-stack containers on one bridge, CHECK, DEL, DEL again,
# nothing left behind; no DAD wait; rollback of failed ADDs; concurrent
# ADDs sharing the gateway; every option; bad config; the reference's
# result shape; and the reference library libcni driving bridge with
# host-local through symlinks.
#
# Uses only namespaces it creates, bridges named tbr*, 10.200.60-67.0/24
# and parts of fd00:200:60::/64. Everything is undone by t_defer.
. "$CNI_TESTS/lib.sh"
VETH_APPLET=bridge
. "$CNI_TESTS/applets/veth-lib.sh"

REF=/usr/lib/cni/bridge

BR=tbr$$
t_defer "ip link del $BR"
IPAM_DIR=$T_TMP/ipam

BASE=$(jq -nc --arg br "$BR" --arg dir "$IPAM_DIR" '{
	cniVersion: "1.0.0", name: "tbrnet", type: "bridge", bridge: $br,
	isDefaultGateway: true,
	ipam: {type: "host-local", dataDir: $dir,
	       ranges: [[{subnet: "10.200.60.0/24"}], [{subnet: "fd00:200:60::60:0/112"}]]}}')
# Leftovers: ports of bridge $1.
ports_of() { ip -o link show master "$1" 2>/dev/null | grep -c . || true; }
ping4() { ip netns exec "${1##*/}" ping -c1 -W2 "$2" >/dev/null; }
ping6() { ip netns exec "${1##*/}" ping -6 -c1 -W2 "$2" >/dev/null; }

ns1=$(t_netns b1)
ns2=$(t_netns b2)
c=$(conf)

# Two containers on one bridge --------------------------------------------
add "$ns1" eth0 c1 "$c"
t_added "ADD c1"
r1=$OUT
t_json "interfaces: bridge, host veth, container" \
	'[.interfaces[] | .name] | (.[0] + " " + (.[1] | test("^veth[0-9a-f]{8}$") | tostring) + " " + .[2])' \
	"$BR true eth0"
t_json "container interface sandbox" '.interfaces[2].sandbox' "$ns1"
t_json "MACs reported" '[.interfaces[] | .mac | test("^([0-9a-f]{2}:){5}[0-9a-f]{2}$")] | all' true
t_json "addresses" '[.ips[] | .address + "@" + (.interface | tostring)] | join(",")' \
	"10.200.60.2/24@2,fd00:200:60::60:2/112@2"
t_json "gateways" '[.ips[].gateway] | join(",")' "10.200.60.1,fd00:200:60::60:1"
t_json "default routes via the gateways" '[.routes[] | .dst + ">" + .gw] | join(",")' \
	"0.0.0.0/0>10.200.60.1,::/0>fd00:200:60::60:1"
t_is "no tentative address right after ADD" "$(tentative "$ns1" eth0)" 0
t_like "gateways on the bridge" "$(ip -o addr show dev "$BR")" \
	'10\.200\.60\.1/24.*fd00:200:60::60:1/112'
t_is "no tentative gateway on the bridge" "$(ip -6 -o addr show dev "$BR" scope global | grep -c tentative)" 0
hv1=$(jq -r '.interfaces[1].name' <<<"$r1")
t_like "host veth is an up port of the bridge" "$(ip -o link show "$hv1")" "master $BR state UP"
t_like "container side has the default routes" \
	"$(ip -n "${ns1##*/}" route; ip -n "${ns1##*/}" -6 route)" \
	'default via 10\.200\.60\.1 dev eth0.*default via fd00:200:60::60:1 dev eth0'
t_is "container accept_dad=0, arp_notify=1" \
	"$(ip netns exec "${ns1##*/}" cat /proc/sys/net/ipv6/conf/eth0/accept_dad /proc/sys/net/ipv4/conf/eth0/arp_notify | tr '\n' ' ')" "0 1 "
t_is "host forwarding on" "$(cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding | tr '\n' ' ')" "1 1 "
t_is "bridge accept_ra=0" "$(cat /proc/sys/net/ipv6/conf/$BR/accept_ra)" 0

add "$ns2" eth0 c2 "$c"
t_added "ADD c2"
r2=$OUT
t_json "second container gets the next addresses" '[.ips[].address] | join(",")' \
	"10.200.60.3/24,fd00:200:60::60:3/112"
t_is "bridge has one IPv4 gateway address (shared)" \
	"$(ip -4 -o addr show dev "$BR" | grep -c 'inet ')" 1
t_ok "c1 pings c2 (IPv4)" ping4 "$ns1" 10.200.60.3
t_ok "c1 pings c2 (IPv6)" ping6 "$ns1" fd00:200:60::60:3
t_ok "c2 pings the gateway (IPv4)" ping4 "$ns2" 10.200.60.1
t_ok "c2 pings the gateway (IPv6)" ping6 "$ns2" fd00:200:60::60:1

# The reference's result has the same shape ------------------------------
if [ -x "$REF" ]; then
	nsr=$(t_netns bref)
	t_defer "ip link del ${BR}r"
	rc=$(jq -c --arg br "${BR}r" '.bridge = $br | .ipam.dataDir += "-ref" |
		.ipam.ranges = [[{subnet: "10.200.61.0/24"}], [{subnet: "fd00:200:60::61:0/112"}]]' <<<"$c")
	ref_add "$nsr" "$rc"
	t_is "result shape matches the reference's" "$(jq -cS "$shape" <<<"$r1")" \
		"$(jq -cS "$shape" <<<"$ref")"
	t_is "same interface order and ip indices as the reference" \
		"$(jq -c '[(.interfaces[1].name | test("^veth")), .interfaces[2].name, [.ips[].interface]]' <<<"$r1")" \
		"$(jq -c '[(.interfaces[1].name | test("^veth")), .interfaces[2].name, [.ips[].interface]]' <<<"$ref")"
	cni_run bridge CHECK "$nsr" eth0 ref <<<"$(with_prev "$rc" "$ref")"
	t_is "our CHECK accepts the reference's attachment" "$RC:$OUT" "0:"
else
	t_skip "result shape matches the reference's" "no $REF"
fi

# CHECK --------------------------------------------------------------------
cni_run bridge CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$r1")"
t_is "CHECK c1 passes" "$RC:$OUT" "0:"
cni_run bridge CHECK "$ns1" eth0 c1 <<<"$c"
t_err "CHECK without prevResult" 7 'prevResult'
ip -n "${ns2##*/}" route del default
cni_run bridge CHECK "$ns2" eth0 c2 <<<"$(with_prev "$c" "$r2")"
t_err "CHECK reports a missing route" 999 'route 0\.0\.0\.0/0 via 10\.200\.60\.1'
ip -n "${ns2##*/}" route add default via 10.200.60.1
ip -n "${ns2##*/}" addr del fd00:200:60::60:3/112 dev eth0
cni_run bridge CHECK "$ns2" eth0 c2 <<<"$(with_prev "$c" "$r2")"
t_err "CHECK reports a missing address" 999 'fd00:200:60::60:3/112'
bad=$(jq -c '.interfaces[2].mac = "02:00:00:00:00:01"' <<<"$r1")
cni_run bridge CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$bad")"
t_err "CHECK reports a changed MAC" 999 'MAC'
bad=$(jq -c '.interfaces[1].name = "vethdeadbeef"' <<<"$r1")
cni_run bridge CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$bad")"
t_err "CHECK reports a missing host veth" 999 'vethdeadbeef'
cni_run bridge CHECK "$ns1" eth0 c1 <<<"$(with_prev "$(conf '{"promiscMode":true}')" "$r1")"
t_err "CHECK reports promiscMode" 999 'promisc'

# DEL ----------------------------------------------------------------------
del "$ns1" eth0 c1 "$c"
t_is "DEL c1 exits 0 and prints nothing" "$RC:$OUT" "0:"
t_nok "container interface gone" ip -n "${ns1##*/}" link show eth0
t_nok "host veth gone" ip link show "$hv1"
del "$ns1" eth0 c1 "$c"
t_is "DEL c1 again" "$RC:$OUT" "0:"
del "$ns2" eth0 c2 "$c"
t_added "DEL c2"
t_is "no port left on the bridge" "$(ports_of "$BR")" 0
t_is "no veth left with a peer in our namespaces" "$(($(peers_of "$ns1") + $(peers_of "$ns2")))" 0
t_is "IPAM reservations released" "$(reserved tbrnet)" 0
t_ok "the bridge itself stays, as the reference leaves it" ip link show "$BR"

# DEL when the namespace is gone, or without CNI_NETNS
ns3=$(t_netns b3)
add "$ns3" eth0 c3 "$c"
t_added "ADD c3"
ip netns del "${ns3##*/}"
del "$ns3" eth0 c3 "$c"
t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
t_is "IPAM released with the namespace gone" "$(reserved tbrnet)" 0
del "" eth0 c3 "$c"
t_is "DEL without CNI_NETNS" "$RC:$OUT" "0:"

# Failed ADDs leave nothing behind ----------------------------------------
ns4=$(t_netns b4)
ip -n "${ns4##*/}" link add eth0 type veth peer name eth0p
ports=$(ports_of "$BR")
add "$ns4" eth0 c4 "$c"
t_err "ADD fails when the ifname exists in the container" 999 'eth0.*already exists'
t_is "no veth left (ifname exists)" "$(peers_of "$ns4"):$(ports_of "$BR")" "0:$ports"
t_is "no IPAM reservation left (ifname exists)" "$(reserved tbrnet)" 0
ip -n "${ns4##*/}" link del eth0

BRS=tbrs$$
t_defer "ip link del $BRS"
small=$(conf "$(jq -nc --arg b "$BRS" '{bridge: $b, name: "tbrsmall", ipam: {ranges: [[{subnet: "10.200.66.0/30"}]]}}')")
add "$ns4" eth0 c5 "$small"
t_added "ADD takes the only address of a /30"
ns5=$(t_netns b5)
add "$ns5" eth0 c6 "$small"
t_err "ADD fails when IPAM is exhausted" 999 'no IP addresses available|no free address|exhausted'
t_is "no veth left (IPAM exhausted)" "$(peers_of "$ns5")" 0
t_nok "no container interface left (IPAM exhausted)" ip -n "${ns5##*/}" link show eth0
del "$ns4" eth0 c5 "$small"

# A failure after IPAM: the bridge already has another IPv4 address.
BRX=tbrx$$
t_defer "ip link del $BRX"
ip link add "$BRX" type bridge
ip addr add 10.200.63.254/24 dev "$BRX"
clash=$(conf "$(jq -nc --arg b "$BRX" '{bridge: $b, name: "tbrclash", ipam: {ranges: [[{subnet: "10.200.63.0/24"}]]}}')")
add "$ns5" eth0 c7 "$clash"
t_err "ADD fails on a different gateway address" 999 'already has an IP address'
t_is "no port left after the late failure" "$(ports_of "$BRX"):$(peers_of "$ns5")" "0:0"
t_is "IPAM reservation released after the late failure" "$(reserved tbrclash)" 0
add "$ns5" eth0 c7 "$(jq -c '.forceAddress = true' <<<"$clash")"
t_added "forceAddress replaces it"
t_is "forceAddress: only the gateway left" "$(ip -4 -o addr show dev "$BRX" | awk '{print $4}')" "10.200.63.1/24"
del "$ns5" eth0 c7 "$clash"

# Concurrent ADDs share the gateway ----------------------------------------
BRC=tbrc$$
t_defer "ip link del $BRC"
cc=$(conf "$(jq -nc --arg b "$BRC" '{bridge: $b, name: "tbrconc",
	ipam: {ranges: [[{subnet: "10.200.62.0/24"}], [{subnet: "fd00:200:60::62:0/112"}]]}}')")
printf '%s' "$cc" >"$T_TMP/conc.conf"
pids=()
for i in 1 2 3 4 5 6; do
	n=$(t_netns "k$i")
	t_defer "CNI_COMMAND=DEL CNI_NETNS=$n CNI_IFNAME=eth0 CNI_CONTAINERID=k$i CNI_PATH=$CNI_PATH $T_BIN/bridge <$T_TMP/conc.conf"
	CNI_COMMAND=ADD CNI_NETNS=$n CNI_IFNAME=eth0 CNI_CONTAINERID=k$i CNI_PATH=$CNI_PATH \
		"$T_BIN/bridge" <"$T_TMP/conc.conf" >"$T_TMP/k$i.out" 2>&1 &
	pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
t_is "6 concurrent ADDs on a new bridge all succeed" "$fails" 0
t_unlike "no 'File exists' from concurrent ADDs" "$(cat "$T_TMP"/k*.out)" 'exists'
t_is "the shared gateways were added once" "$(ip -o addr show dev "$BRC" scope global | awk '{print $4}' | sort | tr '\n' ' ')" \
	"10.200.62.1/24 fd00:200:60::62:1/112 "
t_is "6 ports" "$(ports_of "$BRC")" 6
for i in 1 2 3 4 5 6; do
	cni_run bridge DEL "/run/netns/cni-$T_TAG-k$i" eth0 "k$i" <"$T_TMP/conc.conf"
done
t_is "concurrent attachments removed" "$(ports_of "$BRC"):$(reserved tbrconc)" "0:0"

# Options --------------------------------------------------------------------
ns6=$(t_netns b6)
o=$(conf '{"mtu":1400,"hairpinMode":true,"portIsolation":true,"runtimeConfig":{"mac":"0e:00:00:00:60:06"},"args":{"cni":{"mac":"0e:00:00:00:60:07"}},"dns":{"nameservers":["10.200.60.53"],"search":["example.test"]}}')
# host-local, like the reference's, refuses an unknown MAC= without
# IgnoreUnknown.
add "$ns6" eth0 c8 "$o" "IgnoreUnknown=1;MAC=0e:00:00:00:60:08"
t_added "ADD with options"
hv=$(jq -r '.interfaces[1].name' <<<"$OUT")
t_json "runtimeConfig.mac wins over args and CNI_ARGS" '.interfaces[2].mac' 0e:00:00:00:60:06
t_like "container MAC applied" "$(ip -n "${ns6##*/}" -o link show eth0)" 'link/ether 0e:00:00:00:60:06'
t_like "container MTU" "$(ip -n "${ns6##*/}" -o link show eth0)" 'mtu 1400'
t_like "host veth MTU" "$(ip -o link show "$hv")" 'mtu 1400'
t_like "hairpin and isolation on the port" "$(bridge -d link show dev "$hv")" 'hairpin on.*isolated on'
t_json "config dns replaces IPAM's" '.dns.nameservers[0] + " " + .dns.search[0]' "10.200.60.53 example.test"
del "$ns6" eth0 c8 "$o" "IgnoreUnknown=1;MAC=0e:00:00:00:60:08"
add "$ns6" eth0 c8 "$(conf '{"args":{"cni":{"mac":"0e:00:00:00:60:07"}}}')" "IgnoreUnknown=1;MAC=0e:00:00:00:60:08"
t_json "args.cni.mac wins over CNI_ARGS" '.interfaces[2].mac' 0e:00:00:00:60:07
del "$ns6" eth0 c8 "$c" "IgnoreUnknown=1"
add "$ns6" eth0 c8 "$c" "IgnoreUnknown=1;MAC=0e:00:00:00:60:08;K8S_POD_NAME=x"
t_json "CNI_ARGS MAC" '.interfaces[2].mac' 0e:00:00:00:60:08
del "$ns6" eth0 c8 "$c" "IgnoreUnknown=1"

add "$ns6" eth0 c9 "$(conf '{"enabledad":true}')"
t_added "ADD with enabledad"
t_is "enabledad: accept_dad=1, DAD done before the result" \
	"$(ip netns exec "${ns6##*/}" cat /proc/sys/net/ipv6/conf/eth0/accept_dad):$(tentative "$ns6" eth0)" "1:0"
del "$ns6" eth0 c9 "$c"

# L2 only, promiscuous bridge, disabled container interface.
BRL2=tbrp$$
t_defer "ip link del $BRL2"
l2=$(jq -nc --arg b "$BRL2" '{cniVersion: "1.0.0", name: "tbrl2", type: "bridge", bridge: $b,
	promiscMode: true, ipam: {}}')
add "$ns6" eth0 c10 "$l2"
t_added "L2 ADD"
t_json "L2 result has no addresses" '(.ips // []) | length' 0
t_like "container interface up (L2)" "$(ip -n "${ns6##*/}" -o link show eth0)" 'state UP'
t_like "bridge is promiscuous" "$(ip -d -o link show "$BRL2")" 'promiscuity [1-9]'
del "$ns6" eth0 c10 "$l2"
add "$ns6" eth0 c11 "$(jq -c '.disableContainerInterface = true | .promiscMode = false' <<<"$l2")"
t_added "ADD with disableContainerInterface"
t_unlike "container interface left down" "$(ip -n "${ns6##*/}" -o link show eth0)" 'state UP|,UP'
del "$ns6" eth0 c11 "$l2"

# vlan and vlanTrunk need CONFIG_BRIDGE_VLAN_FILTERING.
BRV=tbrv$$
t_defer "ip link del $BRV"
vl2=$(jq -nc --arg b "$BRV" '{cniVersion: "1.0.0", name: "tbrvl", type: "bridge", bridge: $b,
	vlan: 100, vlanTrunk: [{id: 101}, {minID: 200, maxID: 203}], ipam: {}}')
if ip link add tbrq$$ type bridge vlan_filtering 1 2>/dev/null; then
	ip link del tbrq$$
	add "$ns6" eth0 c12 "$vl2"
	t_added "L2 ADD with vlan and trunk"
	hv=$(jq -r '.interfaces[1].name' <<<"$OUT")
	t_like "bridge has vlan_filtering" "$(ip -d -o link show "$BRV")" 'vlan_filtering 1'
	vl=$(bridge -j vlan show dev "$hv" | jq -c '[.[0].vlans[] | (.vlan | tostring) + (if .vlanEnd then "-" + (.vlanEnd | tostring) else "" end) + (if .flags then ":" + (.flags | join("+")) else "" end)]')
	t_is "port vlans: 100 native, trunk 101 and 200-203, no default vlan 1" "$vl" \
		'["100:PVID+Egress Untagged","101","200-203"]'
	del "$ns6" eth0 c12 "$vl2"

	# A gateway on a VLAN network lives on "<bridge>.<vlan>".
	vgw=$(jq -c --arg dir "$IPAM_DIR" '.isGateway = true | .name = "tbrvgw" | del(.vlanTrunk) |
		.ipam = {type: "host-local", dataDir: $dir, ranges: [[{subnet: "10.200.64.0/24"}]]}' <<<"$vl2")
	t_defer "ip link del $BRV.100"
	add "$ns6" eth0 c13 "$vgw"
	t_added "ADD with isGateway and vlan"
	t_json "result lists the vlan gateway interface" '.interfaces[3].name' "$BRV.100"
	t_like "gateway address on the vlan interface" "$(ip -o addr show dev "$BRV.100")" '10\.200\.64\.1/24'
	t_ok "container pings its vlan gateway" ping4 "$ns6" 10.200.64.1
	del "$ns6" eth0 c13 "$vgw"
else
	add "$ns6" eth0 c12 "$vl2"
	t_err "vlan without kernel support: a clear error" 999 'CONFIG_BRIDGE_VLAN_FILTERING'
	t_is "vlan without kernel support: nothing left" "$(peers_of "$ns6")" 0
	t_skip "vlan and trunk on the port" "kernel lacks CONFIG_BRIDGE_VLAN_FILTERING"
fi

# ipMasq through the netfilter layer, with either backend.
ns7=$(t_netns b7)
BRM=tbrm$$
t_defer "ip link del $BRM"
masq_rules() {
	if [ "$1" = nftables ]; then nft list table inet cni 2>/dev/null; else iptables-save -t nat 2>/dev/null; fi
}
for be in nftables iptables; do
	if [ "$be" = iptables ] && ! iptables-save -t nat >/dev/null 2>&1; then
		t_skip "ipMasq with iptables" "iptables unusable here"
		continue
	fi
	mq=$(conf "$(jq -nc --arg b "$BRM" --arg be "$be" '{bridge: $b, ipMasq: true, ipMasqBackend: $be,
		name: "tbrmasq", ipam: {ranges: [[{subnet: "10.200.67.0/24"}]]}}')")
	add "$ns7" eth0 "m-$be" "$mq"
	t_added "ADD with ipMasq ($be)"
	ip=$(jq -r '.ips[0].address | sub("/.*"; "")' <<<"$OUT")
	t_like "masquerade rule for the container ($be)" "$(masq_rules "$be")" "${ip//./\\.}"
	cni_run bridge CHECK "$ns7" eth0 "m-$be" <<<"$(with_prev "$mq" "$OUT")"
	t_is "CHECK with ipMasq ($be)" "$RC:$OUT" "0:"
	del "$ns7" eth0 "m-$be" "$mq"
	t_unlike "masquerade rule removed by DEL ($be)" "$(masq_rules "$be")" "${ip//./\\.}[/ ]"
done

# The nftables masquerade rules are sent as raw netlink on the fast path:
# they must read back exactly as nft writes them (a prefix that is not a
# whole number of bytes is masked), and masquerade for real: the outside
# knows no route to the containers.
nsq=$(t_netns bq)
BRQ=tbrq$$
t_defer "ip link del $BRQ"
t_defer "ip link del tbrxo$$"
ip link add "tbrxo$$" type veth peer name eth0 netns "${nsq##*/}"
ip addr add 10.200.67.129/25 dev "tbrxo$$"
ip link set "tbrxo$$" up
ip -n "${nsq##*/}" addr add 10.200.67.130/25 dev eth0
ip -n "${nsq##*/}" link set eth0 up
sysctl -qw net.ipv4.ip_forward=1
mq=$(conf "$(jq -nc --arg b "$BRQ" '{bridge: $b, isGateway: true, ipMasq: true, ipMasqBackend: "nftables",
	name: "tbrmasqx", ipam: {ranges: [[{subnet: "10.200.67.0/25"}], [{subnet: "fd00:200:60::67:0/115"}]]}}')")
add "$ns7" eth0 m-raw "$mq"
t_added "ADD with ipMasq, dual stack, prefixes /25 and /115"
ip4=$(jq -r '.ips[] | select(.address | test("^10")) | .address | sub("/.*"; "")' <<<"$OUT")
ip6=$(jq -r '.ips[] | select(.address | test(":")) | .address | sub("/.*"; "")' <<<"$OUT")
chain=$(nft list table inet cni | grep -o "jump masq-[0-9a-f-]*" | head -1 | cut -d' ' -f2)
t_is "masquerade rules read back as nft writes them" \
	"$(nft list chain inet cni "$chain" | grep masquerade | sed 's/^[[:space:]]*//')" \
	"ip saddr $ip4 ip daddr != 10.200.67.0/25 masquerade comment \"masq_src4 $ip4\"
ip6 saddr $ip6 ip6 daddr != fd00:200:60::67:0/115 masquerade comment \"masq_src6 $ip6\""
t_like "map elements jump to the container's chain" "$(nft list map inet cni masq_src4)" \
	"${ip4//./\\.} comment \"net tbrmasqx if eth0 id m-raw\" : jump $chain"
t_ok "masqueraded: the container reaches a host that has no route back" ping4 "$ns7" 10.200.67.130
cni_run bridge CHECK "$ns7" eth0 m-raw <<<"$(with_prev "$mq" "$OUT")"
t_is "CHECK of the raw rules" "$RC:$OUT" "0:"
if command -v strace >/dev/null; then
	nsq2=$(t_netns bq2)
	out2=$(env CNI_COMMAND=ADD CNI_NETNS="$nsq2" CNI_IFNAME=eth0 CNI_CONTAINERID=m-raw2 CNI_PATH="$CNI_PATH" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=openat -o "$T_TMP/br.strace" "$T_BIN/bridge" <<<"$mq" 2>/dev/null)
	t_is "a bridge ADD with ipMasq does not load libnftables" \
		"$(grep -c libnftables "$T_TMP/br.strace"):$(jq -r '.ips | length' <<<"$out2")" "0:2"
	del "$nsq2" eth0 m-raw2 "$mq"
fi
del "$ns7" eth0 m-raw "$mq"
t_is "DEL removes chain and elements" "$(nft list table inet cni | grep -c "$chain\|$ip4")" 0

# Bad config: code 7 naming the field, nothing changed ---------------------
ns8=$(t_netns b8)
# Our part of the host (others may be testing at the same time): our
# bridges and their addresses, veths into the namespace, routes of our
# subnets. Link state is left out: bridges go down asynchronously as their
# last port leaves.
host_state() {
	ip -br addr | awk -v p="$$" -v ns="${ns8##*/}" '$1 ~ "^tbr" && $1 ~ p {$2 = ""; print}'
	ip -o link show type veth | grep -c "link-netns ${ns8##*/}\b"
	ip route | grep '10\.200\.6' | sed 's/ linkdown//'
	ip -6 route | grep 'fd00:200:60:' | sed 's/ linkdown//'
}
before=$(host_state)
badconf() {
	cni_run bridge ADD "$ns8" eth0 bad "${3-}" <<<"$(conf "$2")"
	t_err "bad config: $1" 7 "$1"
}
badconf vlan '{"vlan":5000}'
badconf mtu '{"mtu":"big"}'
badconf 'vlanTrunk\[0\].maxID' '{"vlanTrunk":[{"minID":10}]}'
badconf 'vlanTrunk\[0\].minID' '{"vlanTrunk":[{"minID":20,"maxID":10}]}'
badconf 'vlanTrunk\[1\].id' '{"vlanTrunk":[{"id":1},{"id":4095}]}'
badconf hairpinMode '{"hairpinMode":true,"promiscMode":true}'
badconf disableContainerInterface '{"disableContainerInterface":true}'
badconf bridge '{"bridge":"tbr/x"}'
badconf bridge '{"bridge":"tbr0123456789abc"}'
badconf isGateway '{"isGateway":"yes"}'
badconf ipMasqBackend '{"ipMasq":true,"ipMasqBackend":"pf"}'
badconf macspoofchk '{"macspoofchk":"yes"}'
badconf runtimeConfig.mac '{"runtimeConfig":{"mac":"not-a-mac"}}'
badconf args.cni.mac '{"args":{"cni":{"mac":"01:00:5e:00:00:01"}}}'
badconf 'ipam.type' '{"ipam":{"type":"../host-local"}}'
badconf 'CNI_ARGS' '{}' 'FOO=bar'
t_is "bad configs changed nothing on the host" "$(host_state)" "$before"
t_is "bad configs created nothing in the container" "$(ip -n "${ns8##*/}" -o link | grep -c .)" 1

# macspoofchk: frames from the container's port with another source MAC
# are dropped at the bridge; the entries go with DEL.
ns9=$(t_netns b9)
sc=$(conf '{"macspoofchk":true}')
add "$ns9" eth0 spoof "$sc"
t_added "macspoofchk ADD"
sres=$OUT
smac=$(jq -r '.interfaces[2].mac' <<<"$sres")
shost=$(jq -r '.interfaces[1].name' <<<"$sres")
t_ok "macspoofchk: the container reaches the gateway" ping4 "$ns9" 10.200.60.1
t_like "macspoofchk: the port and MAC are allowed" "$(nft list set bridge cni allowed 2>&1)" "\"$shost\" \\. $smac"
cni_run bridge CHECK "$ns9" eth0 spoof <<<"$(with_prev "$sc" "$sres")"
t_is "macspoofchk: CHECK passes" "$RC:$OUT" "0:"
ip -n "${ns9##*/}" link set eth0 address 02:00:00:00:66:66
ip -n "${ns9##*/}" neigh flush all
t_nok "macspoofchk: a spoofed source MAC is dropped" ping4 "$ns9" 10.200.60.1
ip -n "${ns9##*/}" link set eth0 address "$smac"
ip -n "${ns9##*/}" neigh flush all
t_ok "macspoofchk: the real MAC passes again" ping4 "$ns9" 10.200.60.1
del "$ns9" eth0 spoof "$(with_prev "$sc" "$sres")"
t_is "macspoofchk: DEL" "$RC:$OUT" "0:"
t_unlike "macspoofchk: DEL removed the entry" "$(nft list set bridge cni allowed 2>&1)" "$shost"
cni_run bridge CHECK "$ns9" eth0 spoof <<<"$(with_prev "$sc" "$sres")"
t_like "macspoofchk: CHECK after DEL fails" "$RC" '^[1-9]'
add "$ns9" eth0 spoof2 "$sc"
t_added "macspoofchk: ADD again"
shost=$(jq -r '.interfaces[1].name' <<<"$OUT")
del "$ns9" eth0 spoof2 "$sc"
t_is "macspoofchk: DEL without prevResult" "$RC:$OUT" "0:"
t_unlike "macspoofchk: ... finds the entry by its comment" "$(nft list set bridge cni allowed 2>&1)" "$shost"

# libcni drives bridge (and our host-local) through symlinks --------------
if libcni_driver; then
	BRL=tbrl$$
	t_defer "ip link del $BRL"
	nsl=$(t_netns lib)
	for v in 0.3.1 0.4.0 1.0.0; do
		f="$T_TMP/lib-$v.conflist"
		jq -nc --arg v "$v" --arg b "$BRL" --arg dir "$IPAM_DIR" '{cniVersion: $v, name: "tbrlib",
			plugins: [{type: "bridge", bridge: $b, isGateway: true,
			  ipam: {type: "host-local", dataDir: $dir,
			    ranges: [[{subnet: "10.200.65.0/24"}], [{subnet: "fd00:200:60::65:0/112"}]]}}]}' >"$f"
		t_defer "CNI_PATH=$CNI_PATH CNI_CACHE_DIR=$CNI_CACHE_DIR $drv del $f $nsl lib-$v eth0"
		OUT=$("$drv" add "$f" "$nsl" "lib-$v" eth0 2>"$T_TMP/drv.err"); rc=$?
		t_is "libcni $v ADD" "$rc" 0
		[ "$rc" = 0 ] || t_diag "$(cat "$T_TMP/drv.err")"
		t_json "libcni $v result version" .cniVersion "$v"
		t_json "libcni $v addresses" '[.ips[].address | test("^(10\\.200\\.65\\.|fd00:200:60::65:)")] | "\(length) \(all)"' \
			"2 true"
		t_json "libcni $v interfaces" '[.interfaces[].name] | length' 3
		t_ok "libcni $v container pings the gateway" ping4 "$nsl" 10.200.65.1
		if [ "$v" != 0.3.1 ]; then
			t_ok "libcni $v CHECK" "$drv" check "$f" "$nsl" "lib-$v" eth0
		fi
		t_ok "libcni $v DEL" "$drv" del "$f" "$nsl" "lib-$v" eth0
		t_is "libcni $v left nothing" "$(peers_of "$nsl"):$(reserved tbrlib)" "0:0"
	done
fi
t_done
