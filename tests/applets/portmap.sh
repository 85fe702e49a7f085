#!/usr/bin/env bash
# portmap: a namespace plays the host (bridge tpmbr0, two containers on
# it); in it, for each backend: TCP and UDP through hostPort from the host's
# bridge address, from 127.0.0.1 (route_localnet), from the neighbour and
# from the container itself (hairpin), over IPv6, a hostIP mapping,
# conditions; CHECK; DEL removes exactly one attachment; GC. Then 1000
# mapped containers and one more ADD/DEL, counting rules and netfilter
# transactions (nft monitor generations); interoperation with the reference
# portmap (iptables); bad configs from tests/bad/portmap (code 7, nothing
# installed). Nothing runs in the real host's namespace.
. "$CNI_TESTS/lib.sh"

for tool in nft python3 sha512sum jq; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "portmap" "$tool not installed"
		t_done
	fi
done
HAVE_IPT=1
command -v iptables-restore >/dev/null && command -v ip6tables-restore >/dev/null || HAVE_IPT=

HN=tpm$$h C1=tpm$$a C2=tpm$$b
mkns() { ip netns add "$1" && t_defer "ip netns del $1" && ip -n "$1" link set lo up; }
mkns "$HN" && mkns "$C1" && mkns "$C2" || { t_fail "create namespaces"; t_done; }
h() { ip netns exec "$HN" "$@"; }

h ip link add tpmbr0 type bridge
h ip addr add 10.200.30.1/24 dev tpmbr0
h ip addr add fd00:200:30::1/64 dev tpmbr0 nodad
h ip link set tpmbr0 up
h sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
n=1
for c in "$C1" "$C2"; do
	n=$((n + 1))
	h ip link add "tpmv$n" type veth peer name eth0 netns "$c"
	# Hairpin mode lets a container reach itself through the host port.
	h ip link set "tpmv$n" master tpmbr0 up
	h ip link set "tpmv$n" type bridge_slave hairpin on
	ip -n "$c" addr add "10.200.30.$n/24" dev eth0
	ip -n "$c" addr add "fd00:200:30::$n/64" dev eth0 nodad
	ip -n "$c" link set eth0 up
	ip -n "$c" route add default via 10.200.30.1
	ip -n "$c" -6 route add default via fd00:200:30::1
done

# A TCP+UDP echo server answering "<name> <proto> <peer address>".
cat >"$T_TMP/echo.py" <<'EOF'
import socket, sys, threading
def serve(port, name):
    t = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    for s in (t, u):
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", port))
    t.listen(64)
    def tcp():
        while True:
            c, a = t.accept()
            c.recv(64)
            c.sendall(("%s tcp %s" % (name, a[0].replace("::ffff:", ""))).encode())
            c.close()
    threading.Thread(target=tcp, daemon=True).start()
    while True:
        d, a = u.recvfrom(64)
        u.sendto(("%s udp %s" % (name, a[0].replace("::ffff:", ""))).encode(), a)
def client(proto, host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(1.5)
    try:
        if proto == "tcp":
            s.connect((host, port)); s.sendall(b"hi"); print(s.recv(64).decode())
        else:
            s.sendto(b"hi", (host, port)); print(s.recvfrom(64)[0].decode())
    except OSError as e:
        print("failed: %s" % e)
if sys.argv[1] == "serve":
    serve(int(sys.argv[2]), sys.argv[3])
else:
    client(sys.argv[2], sys.argv[3], int(sys.argv[4]))
EOF
for c in "$C1" "$C2"; do
	ip netns exec "$c" python3 "$T_TMP/echo.py" serve 80 "${c: -1}" >/dev/null 2>&1 &
	t_defer "kill $!"
done
# reach FROM-NS PROTO HOST PORT: the server's answer, or "failed: ..."
reach() { ip netns exec "$1" python3 "$T_TMP/echo.py" client "$2" "$3" "$4"; }
for i in $(seq 50); do [ "$(reach "$C2" tcp 10.200.30.2 80)" = "a tcp 10.200.30.3" ] && break; sleep 0.1; done

# hrun CMD ID CONF: run portmap in the host namespace (OUT, ERR, RC).
hrun() {
	OUT=$(ip netns exec "$HN" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_IFNAME=eth0 \
		CNI_NETNS="/run/netns/$C1" CNI_PATH="$CNI_PATH" "$T_BIN/portmap" <<<"$3" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
}
# conf BACKEND CONTAINER-N MAPPINGS-JSON [EXTRA-JSON]
conf() {
	local be=${1:+"\"backend\":\"$1\","}
	jq -nc --argjson m "$3" --argjson x "${4:-{\}}" --arg ip4 "10.200.30.$2/24" \
		--arg ip6 "fd00:200:30::$2/64" --argjson be "{${be%,}}" \
		'{cniVersion: "1.0.0", name: "tpmnet", type: "portmap",
		  capabilities: {portMappings: true}, runtimeConfig: {portMappings: $m},
		  prevResult: {cniVersion: "1.0.0",
		    interfaces: [{name: "tpmbr0"}, {name: "eth0", sandbox: "/run/netns/x"}],
		    ips: [{address: $ip4, gateway: "10.200.30.1", interface: 1},
		          {address: $ip6, interface: 1}]}} + $be + $x'
}
hex() { printf %s "$1" | sha512sum | cut -c1-"$2"; }
# What one attachment (network tpmnet, ifname eth0) owns, as lines.
owned() { # owned BACKEND ID
	if [ "$1" = nftables ]; then
		local tag; tag="$(hex tpmnet 16)-$(hex "eth0:$2" 16)"
		# chains named after the tag, their rules, elements jumping there
		h nft -j list table inet cni 2>/dev/null | jq -r --arg t "$tag" '.nftables[] |
			(.chain // empty | select(.name | contains($t)) | "chain \(.name)"),
			(.rule // empty | select(.chain | contains($t)) | "rule \(.chain) \(.comment)"),
			(.map // empty | .name as $m | .elem[]? |
			 select(.[1].jump.target | contains($t)) | "\($m) \(.[0] | tojson) \(.[1].jump.target)")'
	else
		local dn="CNI-DN-$(hex "tpmnet$2" 21)"
		{ h iptables-save -t nat; h ip6tables-save -t nat; } | grep -E -- "$dn|id: \\\\\"$2\\\\\"" || true
	fi
}
rules() { # rules (ours and iptables-nft's) plus map elements in the host namespace
	h nft -j list ruleset 2>/dev/null |
		jq '(.nftables | map(select(.rule)) | length) + ([.nftables[] | .map.elem // [] | length] | add)'
}

M1='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":8081,"containerPort":80,"protocol":"udp"}]'
M2='[{"hostPort":9080,"containerPort":80,"protocol":"TCP"},{"hostPort":9090,"containerPort":80,"protocol":"udp","hostIP":"10.200.30.1"}]'
backends=(nftables)
[ -n "$HAVE_IPT" ] && backends+=(iptables) || t_skip "iptables backend" "iptables-restore not installed"

t_spy iptables-save iptables-restore ip6tables-save ip6tables-restore
for be in "${backends[@]}"; do
	c1=$(conf "$be" 2 "$M1") c2=$(conf "$be" 3 "$M2")
	hrun ADD ctr-one "$c1"
	t_is "$be: ADD exits 0" "$RC" 0
	t_json "$be: result is prevResult" '[.ips[].address]|join(",")' "10.200.30.2/24,fd00:200:30::2/64"
	hrun CHECK ctr-one "$c1"
	t_is "$be: CHECK passes" "$RC:$OUT" "0:"
	t_is "$be: route_localnet on the bridge" "$(h sysctl -n net.ipv4.conf.tpmbr0.route_localnet)" 1
	t_is "$be: host -> bridge address tcp" "$(reach "$HN" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	t_is "$be: host -> bridge address udp" "$(reach "$HN" udp 10.200.30.1 8081)" "a udp 10.200.30.1"
	t_is "$be: host -> 127.0.0.1 tcp (masqueraded)" "$(reach "$HN" tcp 127.0.0.1 8080)" "a tcp 10.200.30.1"
	t_is "$be: host -> 127.0.0.1 udp" "$(reach "$HN" udp 127.0.0.1 8081)" "a udp 10.200.30.1"
	t_is "$be: neighbour -> host port tcp (hairpin)" "$(reach "$C2" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	t_is "$be: neighbour -> host port udp (hairpin)" "$(reach "$C2" udp 10.200.30.1 8081)" "a udp 10.200.30.1"
	t_is "$be: container -> itself via host port" "$(reach "$C1" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	t_is "$be: host -> IPv6 host port tcp" "$(reach "$HN" tcp fd00:200:30::1 8080)" "a tcp fd00:200:30::1"
	t_is "$be: neighbour -> IPv6 host port udp" "$(reach "$C2" udp fd00:200:30::1 8081)" "a udp fd00:200:30::1"

	hrun ADD ctr-two "$c2"
	t_is "$be: ADD of a second container" "$RC" 0
	t_is "$be: its TCP port (protocol TCP)" "$(reach "$HN" tcp 10.200.30.1 9080)" "b tcp 10.200.30.1"
	t_is "$be: its hostIP mapping" "$(reach "$C1" udp 10.200.30.1 9090)" "b udp 10.200.30.1"
	t_like "$be: hostIP mapping not on 127.0.0.1" "$(reach "$HN" udp 127.0.0.1 9090)" "failed"
	t_like "$be: ctr-one has rules" "$(owned "$be" ctr-one | wc -l)" '^[1-9]'
	before_two=$(owned "$be" ctr-two)
	t_like "$be: ctr-two has rules" "$(printf '%s\n' "$before_two" | wc -l)" '^[1-9]'

	rm -f "$T_TMP/spy.log"
	PATH=$T_TMP/spy:$PATH hrun DEL ctr-one "$c1"
	t_is "$be: DEL exits 0" "$RC:$OUT" "0:"
	if [ "$be" = nftables ]; then
		t_is "$be: DEL ran no iptables tool (iptables holds nothing)" "$(cat "$T_TMP/spy.log" 2>/dev/null)" ""
	else
		t_like "$be: DEL ran iptables' tools (the spy sees them)" "$(cat "$T_TMP/spy.log" 2>/dev/null)" "iptables-save"
	fi
	t_is "$be: nothing of ctr-one left" "$(owned "$be" ctr-one)" ""
	t_is "$be: ctr-two's rules untouched" "$(owned "$be" ctr-two)" "$before_two"
	hrun CHECK ctr-two "$(conf "$be" 3 "$M2" '{"cniVersion":"1.0.0"}')"
	t_is "$be: CHECK of ctr-two still passes" "$RC:$OUT" "0:"
	t_like "$be: ctr-one's port closed" "$(reach "$HN" tcp 10.200.30.1 8080)" "failed"
	t_is "$be: ctr-two's port still open" "$(reach "$HN" tcp 10.200.30.1 9080)" "b tcp 10.200.30.1"
	hrun CHECK ctr-one "$c1"
	t_like "$be: CHECK of the deleted container fails" "$RC" '^[1-9]'
	hrun DEL ctr-one "$c1"
	t_is "$be: DEL again succeeds" "$RC:$OUT" "0:"

	# Conditions exclude the neighbour from one mapping.
	if [ "$be" = nftables ]; then cond='{"conditionsV4":["ip","saddr","!=","10.200.30.3"]}'
	else cond='{"conditionsV4":["!","-s","10.200.30.3/32"]}'; fi
	hrun ADD ctr-one "$(conf "$be" 2 "$M1" "$cond")"
	t_is "$be: ADD with conditionsV4" "$RC" 0
	t_is "$be: conditions let the host in" "$(reach "$HN" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	t_like "$be: conditions keep the neighbour out" "$(reach "$C2" tcp 10.200.30.1 8080)" "failed"
	hrun DEL ctr-one "$c1"

	# GC keeps ctr-two only.
	hrun ADD ctr-one "$c1"
	gc=$(jq -nc '{cniVersion:"1.1.0",name:"tpmnet",type:"portmap",
		"cni.dev/valid-attachments":[{containerID:"ctr-two",ifname:"eth0"}]}')
	hrun GC "" "$gc"
	t_is "$be: GC exits 0" "$RC:$OUT" "0:"
	t_is "$be: GC removed ctr-one" "$(owned "$be" ctr-one)" ""
	t_is "$be: GC kept ctr-two" "$(owned "$be" ctr-two)" "$before_two"
	hrun DEL ctr-two "$c2"
	t_is "$be: nothing of ctr-two left" "$(owned "$be" ctr-two)" ""

	# masqAll: every mapped connection is masqueraded, whatever its source;
	# snat false: none is.
	hrun ADD ctr-one "$(conf "$be" 2 "$M1" '{"masqAll":true}')"
	t_is "$be: masqAll ADD" "$RC" 0
	if [ "$be" = nftables ]; then
		t_like "$be: masqAll rule" "$(owned "$be" ctr-one)" 'rule pmm-[0-9a-f-]+ null'
		t_is "$be: masqAll has no source match" "$(h nft list chain inet cni "pmm-$(hex tpmnet 16)-$(hex eth0:ctr-one 16)" | grep -c saddr)" 0
	else
		t_like "$be: masqAll rule" "$(owned "$be" ctr-one)" \
			'-A CNI-DN-[0-9a-f]+ -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK'
	fi
	t_is "$be: masqAll: neighbour reaches the port" "$(reach "$C2" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	hrun ADD ctr-one "$(conf "$be" 2 "$M1" '{"snat":false}')"
	t_is "$be: snat false: re-ADD" "$RC" 0
	t_unlike "$be: snat false: no masquerading" "$(owned "$be" ctr-one)" 'SETMARK|masquerade|pmm-[0-9a-f-]+ "'
	t_is "$be: snat false: host still reaches the port" "$(reach "$HN" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	hrun DEL ctr-one "$c1"
	t_is "$be: nothing of ctr-one left" "$(owned "$be" ctr-one)" ""
done

# A UDP flow to a host port before it is mapped leaves a conntrack entry
# that would keep bypassing the new DNAT: ADD deletes it.
ip netns exec "$C2" python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.200.30.3", 40999)); s.sendto(b"x", ("10.200.30.1", 9999))'
ct() { h cat /proc/net/nf_conntrack 2>/dev/null | grep -c 'sport=40999 dport=9999 ' || true; }
t_is "a UDP conntrack entry before the mapping" "$(ct)" 1
hrun ADD ctr-one "$(conf "" 2 '[{"hostPort":9999,"containerPort":80,"protocol":"udp"}]')"
t_is "ADD of a UDP mapping deletes it" "$RC:$(ct)" "0:0"
t_is "the same flow now reaches the container" "$(ip netns exec "$C2" python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1.5)
s.bind(("10.200.30.3", 40999)); s.sendto(b"x", ("10.200.30.1", 9999))
print(s.recvfrom(64)[0].decode())' 2>&1 | tail -1)" "a udp 10.200.30.1"
hrun DEL ctr-one "$c1"

if [ -n "$HAVE_IPT" ]; then
	# externalSetMarkChain (and markMasqBit 14 in another network).
	h iptables -t nat -N TPM-MARK
	h iptables -t nat -A TPM-MARK -j MARK --set-xmark 0x8000/0x8000
	hrun ADD ctr-one "$(conf "" 2 "$M1" '{"externalSetMarkChain":"TPM-MARK"}' | jq -c '.prevResult.ips |= [.[0]]')"
	t_is "externalSetMarkChain picks iptables" "$RC" 0
	t_like "hairpin rules jump to the external chain" "$(owned iptables ctr-one)" \
		'-s 10.200.30.0/24 -p tcp -m tcp --dport 8080 -j TPM-MARK'
	hrun DEL ctr-one "$(conf "" 2 "$M1")"
	t_is "externalSetMarkChain: DEL" "$(owned iptables ctr-one)" ""
	hrun ADD ctr-one "$(conf iptables 2 "$M1" '{"markMasqBit":14}' | jq -c '.name = "tpmnet14"')"
	t_like "markMasqBit 14" "$(h iptables-save -t nat)" 'MARK --set-xmark 0x4000/0x4000'
	hrun DEL ctr-one "$(conf iptables 2 "$M1" | jq -c '.name = "tpmnet14"')"
fi

# Scale: 1000 port-mapped containers, then one more ADD and DEL. The nft
# monitor prints one "new generation" line per committed transaction.
scale() { # scale BACKEND
	local be=$1 mon="$T_TMP/monitor-$1"
	local before after_add after_del gens
	before=$(rules)
	ip netns exec "$HN" nft monitor >"$mon" 2>&1 &
	local mpid=$!
	sleep 0.3
	local t0=$(date +%s%N) c4
	c4=$(conf "$be" 2 "$M1" | jq -c '.prevResult.ips |= [.[0]]') # IPv4 only: one table
	hrun ADD ctr-one "$c4"
	local t1=$(date +%s%N)
	t_is "$be scale: ADD with 1000 containers present" "$RC" 0
	after_add=$(rules)
	t_is "$be scale: the new container is reachable" "$(reach "$HN" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	hrun DEL ctr-one "$c4"
	local t2=$(date +%s%N)
	t_is "$be scale: DEL" "$RC:$OUT" "0:"
	after_del=$(rules)
	sleep 0.3
	kill "$mpid"; wait "$mpid" 2>/dev/null
	gens=$(grep -c 'new generation' "$mon")
	t_diag "$be scale: rules+elements before $before, after ADD $after_add, after DEL $after_del;" \
		"ADD $(((t1 - t0) / 1000000)) ms, DEL $(((t2 - t1) / 1000000)) ms; transactions: $gens"
	t_is "$be scale: rule count back to where it was" "$after_del" "$before"
	t_is "$be scale: ADD and DEL are one transaction each" "$gens" 2
	t_is "$be scale: nothing of ctr-one left" "$(owned "$be" ctr-one)" ""
	# The same again without the monitor reading every event.
	t0=$(date +%s%N)
	hrun ADD ctr-one "$c4"
	t1=$(date +%s%N)
	hrun DEL ctr-one "$c4"
	t2=$(date +%s%N)
	t_diag "$be scale, no monitor: ADD $(((t1 - t0) / 1000000)) ms, DEL $(((t2 - t1) / 1000000)) ms"
}

# nftables: 1000 ADDs through the plugin itself, 8 at a time.
cat >"$T_TMP/bulk.sh" <<EOF
for i in \$(seq \$1 8 1000); do
	printf '{"cniVersion":"1.0.0","name":"tpmbulk","type":"portmap","runtimeConfig":{"portMappings":[{"hostPort":%d,"containerPort":80,"protocol":"tcp"}]},"prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.200.3%d.%d/24"}]}}' \$((20000 + i)) \$((i / 250 + 1)) \$((i % 250 + 2)) |
	ip netns exec $HN env CNI_COMMAND=ADD CNI_CONTAINERID=bulk-\$i CNI_IFNAME=eth0 CNI_NETNS=/run/netns/$C1 CNI_PATH=$CNI_PATH $T_BIN/portmap >/dev/null || echo "bulk-\$i failed"
done
EOF
pids=()
for k in 1 2 3 4 5 6 7 8; do
	bash "$T_TMP/bulk.sh" "$k" >"$T_TMP/bulk-$k.log" 2>&1 &
	pids+=($!)
done
wait "${pids[@]}" # not a bare wait: the echo servers never end
t_is "nftables: 1000 containers added" "$(cat "$T_TMP"/bulk-*.log)" ""
t_is "nftables: 1000 attachment chains" "$(h nft list chains inet | grep -c 'chain pm-')" 1000
scale nftables
t_is "nftables: a bulk container is intact" "$(h nft list chain inet cni "pm-$(hex tpmbulk 16)-$(hex eth0:bulk-500 16)" | grep -c 'dport 20500')" 1

if [ -n "$HAVE_IPT" ]; then
	# iptables: 1000 containers in the reference's own layout, written
	# at once; ours must work beside them and clean theirs up (GC).
	python3 - "$T_TMP/ref.rules" <<'EOF'
import hashlib, sys
out = ["*nat", ":CNI-HOSTPORT-DNAT - [0:0]"]
body = []
for i in range(1, 1001):
    cid = "bulk-%d" % i
    dn = ("CNI-DN-" + hashlib.sha512(("tpmbulk" + cid).encode()).hexdigest())[:28]
    ip = "10.200.3%d.%d" % (i // 250 + 1, i % 250 + 2)
    port = 20000 + i
    out.append(":%s - [0:0]" % dn)
    body.append('-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"tpmbulk\\" id: \\"%s\\"" -m multiport --dports %d -j %s' % (cid, port, dn))
    body.append("-A %s -s %s/24 -p tcp -m tcp --dport %d -j CNI-HOSTPORT-SETMARK" % (dn, ip.rsplit(".", 1)[0] + ".0", port))
    body.append("-A %s -s 127.0.0.1/32 -p tcp -m tcp --dport %d -j CNI-HOSTPORT-SETMARK" % (dn, port))
    body.append("-A %s -p tcp -m tcp --dport %d -j DNAT --to-destination %s:80" % (dn, port, ip))
open(sys.argv[1], "w").write("\n".join(out + body + ["COMMIT", ""]))
EOF
	# The reference's shared chains come first (one ADD makes them).
	hrun ADD ctr-two "$(conf iptables 3 "$M2")"
	hrun DEL ctr-two "$(conf iptables 3 "$M2")"
	t_ok "iptables: 1000 reference-layout containers loaded" \
		h sh -c "iptables-restore --noflush -w <'$T_TMP/ref.rules'"
	t_is "iptables: 1000 CNI-DN chains" "$(h iptables-save -t nat | grep -c '^:CNI-DN-')" 1000
	scale iptables
	valid=$(jq -nc '[range(1;1001) | select(. != 7) | {containerID: "bulk-\(.)", ifname: "eth0"}]')
	hrun GC "" "{\"cniVersion\":\"1.1.0\",\"name\":\"tpmbulk\",\"type\":\"portmap\",\"cni.dev/valid-attachments\":$valid}"
	t_is "iptables: GC exits 0" "$RC:$OUT" "0:"
	t_is "iptables: GC removed the reference's chain of bulk-7 only" \
		"$(h iptables-save -t nat | grep -c '^:CNI-DN-'):$(h iptables-save -t nat | grep -c 'CNI-DN-'"$(hex tpmbulk"bulk-7" 21)")" "999:0"
fi

# Interoperation with the reference plugin (iptables layout, both ways).
REF=/usr/lib/cni/portmap
if [ -z "$HAVE_IPT" ] || [ ! -x "$REF" ]; then
	t_skip "interoperation with the reference portmap" "$REF or iptables not installed"
else
	refrun() {
		OUT=$(ip netns exec "$HN" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_IFNAME=eth0 \
			CNI_NETNS="/run/netns/$C1" CNI_PATH=/usr/lib/cni "$REF" <<<"$3" 2>&1)
		RC=$?
	}
	# The reference's own CHECK is not used: 1.1.1 looks for the IPv4
	# chain and rules in ip6tables too, so it fails on any host with both.
	c1=$(conf iptables 2 "$M1" | jq -c '.prevResult.ips |= [.[0]]')
	refrun ADD ctr-ref "$c1"
	t_is "reference ADD" "$RC" 0
	t_is "reference rules work" "$(reach "$HN" tcp 10.200.30.1 8080)" "a tcp 10.200.30.1"
	hrun CHECK ctr-ref "$c1"
	t_is "our CHECK accepts the reference's rules" "$RC:$OUT" "0:"
	hrun DEL ctr-ref "$c1"
	t_is "our DEL of the reference's rules" "$RC" 0
	t_is "nothing of them left" "$(owned iptables ctr-ref)" ""
	hrun ADD ctr-ours "$c1"
	t_is "our rules for the reference to delete" "$(owned iptables ctr-ours | grep -c -- "-j DNAT")" 2
	refrun DEL ctr-ours "$c1"
	t_is "reference DEL of our rules" "$RC" 0
	t_is "nothing of ours left" "$(owned iptables ctr-ours)" ""
fi

# Bad configs: code 7 naming the field, and nothing installed.
state() {
	{ h nft list ruleset; h iptables-save | grep -v '^#'; } 2>/dev/null | sed 's/counter packets [0-9]* bytes [0-9]*//; s/\[[0-9]*:[0-9]*\]//'
}
snap=$(state)
while read -r file code regex; do
	[ -z "$file" ] || [ "${file:0:1}" = "#" ] && continue
	hrun ADD ctr-bad "$(cat "$CNI_TESTS/bad/portmap/$file")"
	t_err "bad $file" "$code" "$regex"
done <"$CNI_TESTS/bad/portmap/expect"
t_is "bad configs installed nothing" "$(state)" "$snap"

# libnftables is loaded on first use: hidden (a bind mount in a mount
# namespace of our own), the nftables backend is unavailable, code 50,
# and nothing changes.
lib=$(ldconfig -p | awk '$1 == "libnftables.so.1" { print $NF; exit }')
if [ -n "$lib" ]; then
	c=$(conf nftables 2 "$M1")
	OUT=$(unshare -m sh -c 'mount --bind /dev/null "$1" && exec ip netns exec "$2" env CNI_COMMAND=ADD \
		CNI_CONTAINERID=ctr-nolib CNI_IFNAME=eth0 CNI_NETNS="/run/netns/$3" CNI_PATH="$4" "$5"' \
		sh "$lib" "$HN" "$C1" "$CNI_PATH" "$T_BIN/portmap" <<<"$c" 2>"$T_TMP/err")
	RC=$?
	t_err "without libnftables: backend nftables is code 50" 50 "nftables backend unavailable"
	t_is "... and nothing changed" "$(state)" "$snap"
else
	t_skip "without libnftables" "ldconfig does not list libnftables.so.1"
fi

t_done
