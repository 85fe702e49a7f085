#!/usr/bin/env bash
# firewall: a namespace plays the host, with iptables FORWARD policy DROP
# (br_netfilter makes bridged traffic cross FORWARD too). Containers A and
# B share bridge tfwbr0, C sits on tfwbr1, U is outside behind tfwu0.
# Without the plugin A reaches neither B nor U; with it (iptables backend,
# also picked by default here) it reaches both, over IPv4 and IPv6; CHECK;
# DEL removes one container's rules only; interoperation with the
# reference firewall; ingressPolicy same-bridge / isolated; the nftables
# backend (rules, CHECK, DEL, GC, isolation); bad configs (code 7, code 50
# for firewalld when it does not run). Nothing runs in the host namespace.
. "$CNI_TESTS/lib.sh"

for tool in jq ping iptables ip6tables nft; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "firewall" "$tool not installed"
		t_done
	fi
done

P=tfw$$
HN=${P}h A=${P}a B=${P}b C=${P}c U=${P}u
mkns() { ip netns add "$1" && t_defer "ip netns del $1" && ip -n "$1" link set lo up; }
for n in "$HN" "$A" "$B" "$C" "$U"; do mkns "$n" || { t_fail "create namespaces"; t_done; }; done
h() { ip netns exec "$HN" "$@"; }

h sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
for br in tfwbr0:10.200.35.1/24 tfwbr1:10.200.36.1/24; do
	h ip link add "${br%%:*}" type bridge
	h ip addr add "${br#*:}" dev "${br%%:*}"
	h ip link set "${br%%:*}" up
done
h ip addr add fd00:200:30::1/64 dev tfwbr0 nodad
# plug NS VETH BRIDGE ADDR GW [ADDR6 GW6]
plug() {
	h ip link add "$2" type veth peer name eth0 netns "$1"
	h ip link set "$2" master "$3" up
	ip -n "$1" addr add "$4" dev eth0
	ip -n "$1" link set eth0 up
	ip -n "$1" route add default via "$5"
	if [ -n "${6-}" ]; then
		ip -n "$1" addr add "$6" dev eth0 nodad
		ip -n "$1" -6 route add default via "$7"
	fi
}
plug "$A" tfwva tfwbr0 10.200.35.2/24 10.200.35.1 fd00:200:30::2/64 fd00:200:30::1
plug "$B" tfwvb tfwbr0 10.200.35.3/24 10.200.35.1 fd00:200:30::3/64 fd00:200:30::1
plug "$C" tfwvc tfwbr1 10.200.36.2/24 10.200.36.1
h ip link add tfwu0 type veth peer name eth0 netns "$U"
h ip addr add 10.200.37.1/24 dev tfwu0
h ip link set tfwu0 up
ip -n "$U" addr add 10.200.37.2/24 dev eth0
ip -n "$U" link set eth0 up
ip -n "$U" route add default via 10.200.37.1
h ip neigh flush all >/dev/null 2>&1

pings() { ip netns exec "$1" ping -c1 -W1 "$2" >/dev/null 2>&1; }
# hrun CMD ID NS CONF: the firewall plugin in the host namespace.
hrun() {
	OUT=$(ip netns exec "$HN" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_IFNAME=eth0 \
		CNI_NETNS="/run/netns/$3" CNI_PATH="$CNI_PATH" "$T_BIN/firewall" <<<"$4" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
}
# conf BRIDGE ADDRS-JSON [EXTRA-JSON]: a chained config with prevResult.
conf() {
	jq -nc --arg br "$1" --argjson ips "$2" --argjson x "${3:-{\}}" \
		'{cniVersion: "1.0.0", name: "tfwnet", type: "firewall",
		  prevResult: {cniVersion: "1.0.0",
		    interfaces: [{name: $br}, {name: "eth0", sandbox: "/run/netns/x"}],
		    ips: [$ips[] | {address: ., interface: 1}]}} + $x'
}
cA=$(conf tfwbr0 '["10.200.35.2/24","fd00:200:30::2/64"]')
cB=$(conf tfwbr0 '["10.200.35.3/24","fd00:200:30::3/64"]')
cC=$(conf tfwbr1 '["10.200.36.2/24"]')
with() { jq -c --argjson x "$2" '. + $x' <<<"$1"; }
fwd() { { h iptables-save -t filter; h ip6tables-save -t filter; } | grep -E '^-A (CNI-|FORWARD)' || true; }

h iptables -P FORWARD DROP
h ip6tables -P FORWARD DROP
t_ok "container reaches the host itself" pings "$A" 10.200.35.1
t_nok "policy DROP: A cannot reach its neighbour B" pings "$A" 10.200.35.3
t_nok "policy DROP: A cannot reach the outside" pings "$A" 10.200.37.2

hrun ADD ctr-a "$A" "$cA"
t_is "ADD (default backend) exits 0" "$RC" 0
t_json "result is prevResult" '[.ips[].address]|join(",")' "10.200.35.2/24,fd00:200:30::2/64"
t_like "default backend is iptables where FORWARD is" "$(fwd)" "-A CNI-FORWARD -s 10.200.35.2/32 -j ACCEPT"
hrun ADD ctr-b "$B" "$cB"
t_is "ADD for B" "$RC" 0
t_ok "with the plugin: A reaches B" pings "$A" 10.200.35.3
t_ok "with the plugin: B reaches A" pings "$B" 10.200.35.2
t_ok "with the plugin: A reaches the outside" pings "$A" 10.200.37.2
t_ok "with the plugin: A reaches B over IPv6" pings "$A" fd00:200:30::3
t_nok "C (no plugin) still cannot get out" pings "$C" 10.200.37.2
want="-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD
-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN
-A CNI-FORWARD -d 10.200.35.2/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A CNI-FORWARD -s 10.200.35.2/32 -j ACCEPT"
t_is "the reference's rule layout" "$(h iptables-save -t filter | grep -E '^-A' | grep -v 10.200.35.3)" "$want"
hrun CHECK ctr-a "$A" "$cA"
t_is "CHECK passes" "$RC:$OUT" "0:"
before_b=$(fwd | grep -F -e 10.200.35.3 -e fd00:200:30::3)
hrun DEL ctr-a "$A" "$cA"
t_is "DEL exits 0" "$RC:$OUT" "0:"
t_is "nothing of A left" "$(fwd | grep -F -e 10.200.35.2 -e fd00:200:30::2)" ""
t_is "B's rules untouched" "$(fwd | grep -F -e 10.200.35.3 -e fd00:200:30::3)" "$before_b"
t_nok "after DEL: A cannot get out" pings "$A" 10.200.37.2
t_ok "after DEL: B still can" pings "$B" 10.200.37.2
hrun CHECK ctr-a "$A" "$cA"
t_like "CHECK fails after DEL" "$RC" '^[1-9]'
hrun DEL ctr-a "$A" "$cA"
t_is "DEL again succeeds" "$RC:$OUT" "0:"
hrun DEL ctr-a "$A" "$(conf tfwbr0 '[]' | jq -c 'del(.prevResult)')"
t_is "DEL without prevResult succeeds" "$RC:$OUT" "0:"

# A custom admin chain is created, jumped to, and left to the admin.
hrun ADD ctr-a "$A" "$(with "$cA" '{"backend":"iptables","iptablesAdminChainName":"TFW-ADMIN"}')"
t_like "iptablesAdminChainName" "$(fwd)" "-j TFW-ADMIN"
h iptables -A TFW-ADMIN -s 10.200.35.2/32 -d 10.200.37.2/32 -j DROP
t_nok "the admin chain runs first" pings "$A" 10.200.37.2
h iptables -F TFW-ADMIN
hrun DEL ctr-a "$A" "$(with "$cA" '{"backend":"iptables","iptablesAdminChainName":"TFW-ADMIN"}')"

# Interoperation with the reference plugin, both ways.
REF=/usr/lib/cni/firewall
if [ ! -x "$REF" ]; then
	t_skip "interoperation with the reference firewall" "$REF not installed"
else
	refrun() {
		OUT=$(ip netns exec "$HN" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_IFNAME=eth0 \
			CNI_NETNS="/run/netns/$A" CNI_PATH=/usr/lib/cni "$REF" <<<"$3" 2>&1)
		RC=$?
	}
	ci=$(with "$cA" '{"backend":"iptables"}')
	refrun ADD ctr-a "$ci"
	t_is "reference ADD" "$RC" 0
	t_ok "reference rules let A out" pings "$A" 10.200.37.2
	hrun CHECK ctr-a "$A" "$ci"
	t_is "our CHECK accepts the reference's rules" "$RC:$OUT" "0:"
	hrun DEL ctr-a "$A" "$ci"
	t_is "our DEL removes them" "$(fwd | grep -F -e 10.200.35.2 -e fd00:200:30::2)" ""
	hrun ADD ctr-a "$A" "$ci"
	refrun CHECK ctr-a "$ci"
	t_is "reference CHECK accepts ours" "$RC:$OUT" "0:"
	refrun DEL ctr-a "$ci"
	t_is "reference DEL removes ours" "$(fwd | grep -F -e 10.200.35.2 -e fd00:200:30::2)" ""
fi

# ingressPolicy same-bridge (iptables): A and C on different bridges.
hrun ADD ctr-a "$A" "$(with "$cA" '{"ingressPolicy":"same-bridge"}')"
hrun ADD ctr-c "$C" "$(with "$cC" '{"ingressPolicy":"same-bridge"}')"
t_is "same-bridge ADD" "$RC" 0
t_ok "same-bridge: A reaches B (same bridge)" pings "$A" 10.200.35.3
t_nok "same-bridge: A cannot reach C (other bridge)" pings "$A" 10.200.36.2
t_ok "same-bridge: A still reaches the outside" pings "$A" 10.200.37.2
t_like "isolation chains in the reference's shape" "$(fwd)" \
	'-A CNI-ISOLATION-STAGE-1 -i tfwbr0 ! -o tfwbr0 -m comment --comment "CNI firewall plugin rules \(ingressPolicy: same-bridge\)" -j CNI-ISOLATION-STAGE-2'
for x in ctr-a:"$A":"$cA" ctr-b:"$B":"$cB" ctr-c:"$C":"$cC"; do
	IFS=: read -r id ns c <<<"$x"
	hrun DEL "$id" "$ns" "$c"
done
# Per family: FORWARD -> CNI-FORWARD, and CNI-FORWARD -> CNI-ADMIN and
# -> TFW-ADMIN (from the custom admin chain above), as the reference.
t_is "DEL leaves only the shared jumps and isolation rules" "$(fwd | grep -vc ISOLATION)" 6
h iptables -P FORWARD ACCEPT
h ip6tables -P FORWARD ACCEPT
h sh -c 'iptables -F FORWARD; iptables -F CNI-ISOLATION-STAGE-1; iptables -F CNI-ISOLATION-STAGE-2'

# nftables backend: table inet cni, chain fw-<tag> per attachment.
hex() { printf %s "$1" | sha512sum | cut -c1-"$2"; }
tagA="$(hex tfwnet 16)-$(hex eth0:ctr-a 16)" tagB="$(hex tfwnet 16)-$(hex eth0:ctr-b 16)"
# Without "backend" where iptables' FORWARD cannot drop (policy ACCEPT,
# only jumps to CNI-* chains), the rules go to nftables, and DEL then runs
# no iptables tool. A rule of the host's own in FORWARD: iptables again.
h iptables -A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD
hrun ADD ctr-a "$A" "$cA"
t_is "FORWARD policy ACCEPT: ADD (default backend)" "$RC" 0
t_like "... goes to nftables" "$(h nft list chain inet cni "fw-$tagA" 2>&1)" 'ip saddr 10.200.35.2 accept'
t_is "... and not to iptables" "$(fwd | grep -c '10\.200\.35\.2')" 0
t_is "... its rules (sent as raw netlink) read back as nft writes them" \
	"$(h nft list chain inet cni "fw-$tagA" | grep accept | sed 's/^[[:space:]]*//')" \
	'ip daddr 10.200.35.2 ct state established,related accept comment "fw_dst4 10.200.35.2"
ip saddr 10.200.35.2 accept comment "fw_src4 10.200.35.2"
ip6 daddr fd00:200:30::2 ct state established,related accept comment "fw_dst6 fd00:200:30::2"
ip6 saddr fd00:200:30::2 accept comment "fw_src6 fd00:200:30::2"'
t_like "... and its elements" "$(h nft list map inet cni fw_src6)" \
	"fd00:200:30::2 comment \"net tfwnet if eth0 id ctr-a\" : jump fw-$tagA"
hrun CHECK ctr-a "$A" "$cA"
t_is "... CHECK" "$RC:$OUT" "0:"
if command -v strace >/dev/null; then
	hrun DEL ctr-a "$A" "$cA"
	ip netns exec "$HN" env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-a CNI_IFNAME=eth0 \
		CNI_NETNS="/run/netns/$A" CNI_PATH="$CNI_PATH" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=openat -o "$T_TMP/fw.strace" "$T_BIN/firewall" <<<"$cA" >/dev/null 2>&1
	t_is "... an ADD that finds the table ready does not load libnftables" \
		"$(grep -c 'libnftables' "$T_TMP/fw.strace"):$(h nft list chain inet cni "fw-$tagA" | grep -c accept)" "0:4"
fi
t_ok "... A reaches the outside" pings "$A" 10.200.37.2
t_spy iptables-save iptables-restore ip6tables-save ip6tables-restore
PATH=$T_TMP/spy:$PATH hrun DEL ctr-a "$A" "$cA"
t_is "... DEL" "$RC:$OUT" "0:"
t_is "... DEL ran no iptables tool (iptables holds nothing of A)" "$(cat "$T_TMP/spy.log" 2>/dev/null)" ""
t_is "... nothing of A left" "$(h nft list chains inet | grep -c "fw-$tagA")" 0
h iptables -A FORWARD -s 10.200.99.99/32 -j DROP
hrun ADD ctr-a "$A" "$cA"
t_is "a host rule in FORWARD: ADD (default backend)" "$RC" 0
t_like "... goes to iptables" "$(fwd)" "-A CNI-FORWARD -s 10.200.35.2/32 -j ACCEPT"
t_is "... and not to nftables" "$(h nft list chains inet 2>/dev/null | grep -c "fw-$tagA")" 0
PATH=$T_TMP/spy:$PATH hrun DEL ctr-a "$A" "$cA"
t_is "... DEL removes it" "$RC:$(fwd | grep -c '10\.200\.35\.2')" "0:0"
t_like "... with iptables' tools (the spy sees them)" "$(cat "$T_TMP/spy.log" 2>/dev/null)" "iptables-restore"
h iptables -F FORWARD

nA=$(with "$cA" '{"backend":"nftables","ingressPolicy":"isolated"}')
nB=$(with "$cB" '{"backend":"nftables","ingressPolicy":"isolated"}')
hrun ADD ctr-a "$A" "$nA"
t_is "nftables ADD" "$RC" 0
hrun ADD ctr-b "$B" "$nB"
t_like "nftables: A's chain" "$(h nft list chain inet cni "fw-$tagA")" 'ip saddr 10.200.35.2 accept'
hrun CHECK ctr-a "$A" "$nA"
t_is "nftables CHECK" "$RC:$OUT" "0:"
t_nok "isolated: A cannot reach B on the same bridge" pings "$A" 10.200.35.3
t_ok "isolated: A reaches the outside" pings "$A" 10.200.37.2
h nft add rule inet cni fw_admin ip saddr 10.200.35.2 ip daddr 10.200.37.2 drop
t_nok "nftables: fw_admin runs first" pings "$A" 10.200.37.2
h nft flush chain inet cni fw_admin
gc=$(jq -nc '{cniVersion:"1.1.0",name:"tfwnet",type:"firewall",
	"cni.dev/valid-attachments":[{containerID:"ctr-b",ifname:"eth0"}]}')
hrun GC "" "$A" "$gc"
t_is "nftables GC" "$RC:$OUT" "0:"
t_is "GC removed A's chain" "$(h nft list chains inet | grep -c "fw-$tagA")" 0
t_is "GC kept B's chain" "$(h nft list chains inet | grep -c "fw-$tagB")" 1
hrun DEL ctr-b "$B" "$nB"
t_is "nftables DEL" "$RC:$OUT" "0:"
t_is "nothing of B left" "$(h nft -j list table inet cni | jq '[.nftables[] | .map.elem // [] | .[]] | length'):$(h nft list chains inet | grep -c "fw-")" "0:0"

# Bad configs: code 7 naming the field (50: firewalld not running), and
# nothing installed.
state() { { h nft list ruleset; h iptables-save | grep -v '^#'; } 2>/dev/null | sed 's/counter packets [0-9]* bytes [0-9]*//; s/\[[0-9]*:[0-9]*\]//'; }
snap=$(state)
while read -r file code regex; do
	[ -z "$file" ] || [ "${file:0:1}" = "#" ] && continue
	hrun ADD ctr-bad "$A" "$(cat "$CNI_TESTS/bad/firewall/$file")"
	t_err "bad $file" "$code" "$regex"
done <"$CNI_TESTS/bad/firewall/expect"
t_is "bad configs installed nothing" "$(state)" "$snap"

t_done
