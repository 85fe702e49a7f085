#!/usr/bin/env bash
# ptp: a dual-stack container routed through its host veth pings the host;
# the routes on both sides; CHECK, DEL, DEL again, nothing left behind; no
# DAD wait; rollback of failed ADDs (the IPAM reservation included); bad
# config; the reference's result shape; libcni through symlinks.
#
# Uses only namespaces it creates, 10.200.68-69.0/24 and parts of
# fd00:200:60::/64. Everything is undone by t_defer.
. "$CNI_TESTS/lib.sh"
VETH_APPLET=ptp
. "$CNI_TESTS/applets/veth-lib.sh"

REF=/usr/lib/cni/ptp
IPAM_DIR=$T_TMP/ipam

BASE=$(jq -nc --arg dir "$IPAM_DIR" '{
	cniVersion: "1.0.0", name: "tptp", type: "ptp", mtu: 1400,
	dns: {nameservers: ["10.200.68.1"], domain: "ptp.test"},
	ipam: {type: "host-local", dataDir: $dir,
	       ranges: [[{subnet: "10.200.68.0/24"}], [{subnet: "fd00:200:60::68:0/112"}]],
	       routes: [{dst: "0.0.0.0/0"}, {dst: "::/0"}]}}')
nsx() { ip netns exec "${1##*/}" "${@:2}"; }

ns1=$(t_netns p1)
c=$(conf)

add "$ns1" eth0 c1 "$c"
t_added "ADD"
r1=$OUT
t_json "interfaces: host veth, container" \
	'[(.interfaces[0].name | test("^veth[0-9a-f]{8}$")), .interfaces[1].name, .interfaces[1].sandbox] | map(tostring) | join(" ")' \
	"true eth0 $ns1"
t_json "addresses on the container interface" '[.ips[] | .address + "@" + (.interface | tostring)] | join(",")' \
	"10.200.68.2/24@1,fd00:200:60::68:2/112@1"
t_json "gateways" '[.ips[].gateway] | join(",")' "10.200.68.1,fd00:200:60::68:1"
t_json "IPAM routes reported" '[.routes[].dst] | join(",")' "0.0.0.0/0,::/0"
t_json "config dns in the result" '.dns.nameservers[0] + " " + .dns.domain' "10.200.68.1 ptp.test"
t_is "no tentative address right after ADD" "$(tentative "$ns1" eth0)" 0
hv=$(jq -r '.interfaces[0].name' <<<"$r1")
t_is "no tentative gateway on the host veth" "$(ip -6 -o addr show dev "$hv" scope global | grep -c tentative)" 0
t_like "container routes: gateway on-link, prefix via gateway, default" \
	"$(ip -n "${ns1##*/}" route)" \
	'default via 10\.200\.68\.1 dev eth0.*10\.200\.68\.0/24 via 10\.200\.68\.1 dev eth0 src 10\.200\.68\.2.*10\.200\.68\.1 dev eth0 scope link src 10\.200\.68\.2'
t_unlike "no on-link prefix route in the container" "$(ip -n "${ns1##*/}" route)" \
	'10\.200\.68\.0/24 dev eth0 proto kernel'
t_like "IPv6 routes likewise" "$(ip -n "${ns1##*/}" -6 route)" \
	'fd00:200:60::68:1 dev eth0.*fd00:200:60::68:0/112 via fd00:200:60::68:1 dev eth0.*default via fd00:200:60::68:1'
t_like "host veth carries the gateways" "$(ip -o addr show dev "$hv")" \
	'10\.200\.68\.1/32.*fd00:200:60::68:1/128'
t_like "host routes to the container" "$(ip route show dev "$hv"; ip -6 route show dev "$hv")" \
	'10\.200\.68\.2 scope host.*fd00:200:60::68:2 '
t_like "MTU on both ends" "$(ip -o link show "$hv"; ip -n "${ns1##*/}" -o link show eth0)" \
	'mtu 1400.*mtu 1400'
t_is "host forwarding on" "$(cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding | tr '\n' ' ')" "1 1 "
t_ok "container pings the host (IPv4)" nsx "$ns1" ping -c1 -W2 10.200.68.1
t_ok "container pings the host (IPv6)" nsx "$ns1" ping -6 -c1 -W2 fd00:200:60::68:1
t_ok "host pings the container (IPv4)" ping -c1 -W2 10.200.68.2
t_ok "host pings the container (IPv6)" ping -6 -c1 -W2 fd00:200:60::68:2

ns2=$(t_netns p2)
add "$ns2" eth0 c2 "$c"
t_added "ADD a second container"
t_ok "containers reach each other through the host" nsx "$ns1" ping -c1 -W2 10.200.68.3
t_ok "containers reach each other through the host (IPv6)" nsx "$ns1" ping -6 -c1 -W2 fd00:200:60::68:3

# The reference's result has the same shape.
if [ -x "$REF" ]; then
	nsr=$(t_netns pref)
	rc=$(jq -c '.ipam.dataDir += "-ref" |
		.ipam.ranges = [[{subnet: "10.200.69.0/26"}], [{subnet: "fd00:200:60::69:0/112"}]]' <<<"$c")
	ref_add "$nsr" "$rc"
	t_is "result shape matches the reference's" "$(jq -cS "$shape" <<<"$r1")" \
		"$(jq -cS "$shape" <<<"$ref")"
	t_is "container routes match the reference's" \
		"$(ip -n "${ns1##*/}" route | sed 's/10\.200\.68\./X./g; s#/24 #/P #' | sort)" \
		"$(ip -n "${nsr##*/}" route | sed 's/10\.200\.69\./X./g; s#/26 #/P #' | sort)"
	cni_run ptp CHECK "$nsr" eth0 ref <<<"$(with_prev "$rc" "$ref")"
	t_is "our CHECK accepts the reference's attachment" "$RC:$OUT" "0:"
else
	t_skip "result shape matches the reference's" "no $REF"
fi

# CHECK
cni_run ptp CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$r1")"
t_is "CHECK passes" "$RC:$OUT" "0:"
cni_run ptp CHECK "$ns1" eth0 c1 <<<"$c"
t_err "CHECK without prevResult" 7 'prevResult'
ip -n "${ns1##*/}" route del default
cni_run ptp CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$r1")"
t_err "CHECK reports a missing route" 999 'route 0\.0\.0\.0/0'
cni_run ptp CHECK "$ns1" eth0 c1 <<<"$(with_prev "$c" "$(jq -c '.interfaces[1].sandbox = "/run/netns/other"' <<<"$r1")")"
t_err "CHECK reports another sandbox" 999 'Sandbox'

# DEL
del "$ns1" eth0 c1 "$c"
t_is "DEL exits 0 and prints nothing" "$RC:$OUT" "0:"
t_nok "host veth gone" ip link show "$hv"
t_is "host routes gone" "$(ip route | grep -c '10\.200\.68\.2 ')" 0
del "$ns1" eth0 c1 "$c"
t_is "DEL again" "$RC:$OUT" "0:"
del "$ns2" eth0 c2 "$c"
t_is "DEL second" "$RC" 0
t_is "nothing left: veths, reservations" "$(($(peers_of "$ns1") + $(peers_of "$ns2"))):$(reserved tptp)" "0:0"

ns3=$(t_netns p3)
add "$ns3" eth0 c3 "$c"
t_added "ADD c3"
ip netns del "${ns3##*/}"
del "$ns3" eth0 c3 "$c"
t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
t_is "IPAM released with the namespace gone" "$(reserved tptp)" 0

# A failed ADD: IPAM ran first, so its reservation must be released too.
ns4=$(t_netns p4)
ip -n "${ns4##*/}" link add eth0 type veth peer name eth0p
add "$ns4" eth0 c4 "$c"
t_err "ADD fails when the ifname exists" 999 'eth0.*already exists'
t_is "nothing left after the failed ADD" "$(peers_of "$ns4"):$(reserved tptp)" "0:0"
ip -n "${ns4##*/}" link del eth0
small=$(conf '{"name":"tptpsmall","ipam":{"ranges":[[{"subnet":"10.200.69.64/30"}]],"routes":[]}}')
add "$ns4" eth0 c5 "$small"
t_added "ADD takes the only address of a /30"
ns5=$(t_netns p5)
add "$ns5" eth0 c6 "$small"
t_err "ADD fails when IPAM is exhausted" 999 'no IP addresses available|no free address|exhausted'
t_is "no veth left (IPAM exhausted)" "$(peers_of "$ns5")" 0
del "$ns4" eth0 c5 "$small"

# ipMasq through the netfilter layer.
mq=$(conf '{"ipMasq":true,"ipMasqBackend":"nftables","name":"tptpmasq"}')
add "$ns5" eth0 c7 "$mq"
t_added "ADD with ipMasq"
t_like "masquerade rule for the container" "$(nft list table inet cni 2>/dev/null)" '10\.200\.68\.'
cni_run ptp CHECK "$ns5" eth0 c7 <<<"$(with_prev "$mq" "$OUT")"
t_is "CHECK with ipMasq" "$RC:$OUT" "0:"
del "$ns5" eth0 c7 "$mq"
t_unlike "masquerade rule removed" "$(nft list table inet cni 2>/dev/null)" '10\.200\.68\.'

# Bad config: code 7 naming the field, nothing changed.
ns6=$(t_netns p6)
# Our part of the host only: others may be testing at the same time.
host_state() {
	ip -o link show type veth | grep -c "link-netns ${ns6##*/}\b"
	ip route | grep '10\.200\.6[89]' | sed 's/ linkdown//'
	ip -6 route | grep 'fd00:200:60:' | sed 's/ linkdown//'
}
before=$(host_state)
badconf() {
	cni_run ptp ADD "$ns6" eth0 bad "" <<<"$2"
	t_err "bad config: $1" 7 "$1"
}
badconf ipam.type "$(jq -c 'del(.ipam)' <<<"$c")"
badconf mtu "$(conf '{"mtu":-1}')"
badconf ipMasq "$(conf '{"ipMasq":"yes"}')"
badconf ipMasqBackend "$(conf '{"ipMasqBackend":"ebtables"}')"
badconf 'dns.nameservers' "$(conf '{"dns":{"nameservers":"10.0.0.1"}}')"
t_is "bad configs changed nothing" "$(host_state)" "$before"
t_is "bad configs left no reservation" "$(reserved tptp)" 0

# libcni drives ptp with host-local through symlinks.
if libcni_driver; then
	nsl=$(t_netns lib)
	f="$T_TMP/lib.conflist"
	jq -nc --arg dir "$IPAM_DIR" '{cniVersion: "1.0.0", name: "tptplib",
		plugins: [{type: "ptp", ipam: {type: "host-local", dataDir: $dir,
		  ranges: [[{subnet: "10.200.69.128/25"}]]}}]}' >"$f"
	t_defer "CNI_PATH=$CNI_PATH CNI_CACHE_DIR=$CNI_CACHE_DIR $drv del $f $nsl lib eth0"
	OUT=$("$drv" add "$f" "$nsl" lib eth0 2>"$T_TMP/drv.err"); rc=$?
	t_is "libcni ADD" "$rc" 0
	[ "$rc" = 0 ] || t_diag "$(cat "$T_TMP/drv.err")"
	t_json "libcni address" '.ips[0].address' 10.200.69.130/25
	t_ok "libcni container pings the host" nsx "$nsl" ping -c1 -W2 10.200.69.129
	t_ok "libcni CHECK" "$drv" check "$f" "$nsl" lib eth0
	t_ok "libcni DEL" "$drv" del "$f" "$nsl" lib eth0
	t_is "libcni left nothing" "$(peers_of "$nsl"):$(reserved tptplib)" "0:0"
fi
t_done
