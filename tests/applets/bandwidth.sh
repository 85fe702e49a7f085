#!/usr/bin/env bash
# bandwidth: tbf on the host veth and an ifb with a redirect, read back
# through netlink (tc), compared by CHECK, removed by DEL; traffic through
# the shaped veth measurably limited in both directions; bad values
# refused with code 7 before anything is created; a half-done ADD rolled
# back. A test namespace plays the host: the real host is never touched.
. "$CNI_TESTS/lib.sh"

host=$(t_netns bwh); hn=${host##*/}
cont=$(t_netns bwc); cn=${cont##*/}
# What ptp would have built: a veth pair host <-> container, addressed.
ip -n "$hn" link add tbwh0 type veth peer name tbwc0 netns "$cn"
ip -n "$hn" addr add 10.200.81.1/24 dev tbwh0
ip -n "$hn" addr add 10.200.82.1/24 dev tbwh0
ip -n "$cn" addr add 10.200.81.2/24 dev tbwc0
ip -n "$hn" link set tbwh0 up
ip -n "$cn" link set tbwc0 up
ip -n "$cn" route add 10.200.82.0/24 dev tbwc0

prev="{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"tbwh0\"},{\"name\":\"tbwc0\",\"sandbox\":\"$cont\"}],\"ips\":[{\"address\":\"10.200.81.2/24\",\"interface\":1}]}"
conf() {
	local extra=${1-}
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"bwnet\",\"type\":\"bandwidth\"${extra:+,$extra},\"prevResult\":$prev}"
}
# bw_run CMD ID [CNI_ARGS]: run the applet inside the host namespace.
bw_run() {
	local ef="$T_TMP/stderr"
	OUT=$(ip netns exec "$hn" env CNI_COMMAND="$1" CNI_NETNS="$cont" CNI_IFNAME=tbwc0 \
		CNI_CONTAINERID="$2" CNI_ARGS="${3-}" CNI_PATH="$CNI_PATH" "$T_BIN/bandwidth" 2>"$ef")
	RC=$?
	ERR=$(cat "$ef")
}
# The ifb name: "bwp" and 12 hex digits of sha512(network name + id).
ifb_of() { printf '%s' "bwnet$1" | sha512sum | cut -c1-12 | sed 's/^/bwp/'; }
qd() { ip netns exec "$hn" tc -j qdisc show dev "$1" 2>/dev/null; }
root_of() { qd "$1" | jq -r '.[] | select(.root) | .kind + " " + (.options.rate|tostring) + " " + (.options.burst|tostring)'; }
links() { ip -n "$hn" -br link | awk '{print $1}' | sort | tr '\n' ' '; }
# Host-side tc and link state, to prove a failed call left nothing.
hstate() { echo "$(links) | $(qd tbwh0 | jq -c '[.[].kind]')"; }
clean=$(hstate)

# xfer SRC_NS DST_NS DST_IP [SRC_IP]: send 2 MB over TCP; prints the
# elapsed milliseconds and the bytes received. The listener is perl
# (perl-base is essential on Debian); the sender bash's /dev/tcp.
xfer() {
	local src=$1 dst=$2 ip=$3 out="$T_TMP/xfer.$RANDOM"
	ip netns exec "$dst" perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(LocalAddr => $ARGV[0], LocalPort => 5201,
			Listen => 1, ReuseAddr => 1) or die "listen: $!";
		$SIG{ALRM} = sub { exit 1 }; alarm 30;
		my $c = $s->accept or die; my $n = 0;
		while (my $r = sysread($c, my $b, 65536)) { $n += $r }
		open my $f, ">", $ARGV[1] or die; print $f "$n\n";' "$ip" "$out" &
	local lp=$!
	for _ in $(seq 50); do
		ip netns exec "$dst" ss -Htln "sport = :5201" | grep -q . && break
		sleep 0.05
	done
	local t0 t1
	t0=$(date +%s%N)
	ip netns exec "$src" timeout 30 bash -c \
		"exec 3<>/dev/tcp/$ip/5201 && head -c 2000000 /dev/zero >&3 && exec 3>&-"
	wait "$lp"
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000000)) $(cat "$out" 2>/dev/null)"
}
# slow/fast DESC "MS BYTES": 2 MB at 8 Mbit/s takes about 2 s.
slow() {
	local ms=${2% *} n=${2#* }
	if [ "$n" = 2000000 ] && [ "$ms" -ge 1500 ]; then t_pass "$1 (${ms} ms)"; else t_fail "$1" "got $2 (ms bytes), want >= 1500 ms for 2000000 bytes"; fi
}
fast() {
	local ms=${2% *} n=${2#* }
	if [ "$n" = 2000000 ] && [ "$ms" -lt 1000 ]; then t_pass "$1 (${ms} ms)"; else t_fail "$1" "got $2 (ms bytes), want < 1000 ms for 2000000 bytes"; fi
}

ifb=$(ifb_of c1)
lim='"ingressRate":8000000,"ingressBurst":160000,"egressRate":8000000,"egressBurst":160000'
bw_run ADD c1 <<<"$(conf "$lim")"
t_is "ADD exits 0" "$RC" 0
t_json "result adds the ifb, outside the container" '.interfaces[2].name + " " + (.interfaces[2].sandbox // "host")' "$ifb host"
t_json "result keeps prevResult" '.interfaces[1].name + " " + .ips[0].address' "tbwc0 10.200.81.2/24"
t_is "tbf on the host veth: 1000000 B/s, 20000 B burst" "$(root_of tbwh0)" "tbf 1000000 20000"
t_is "tbf on the ifb: 1000000 B/s, 20000 B burst" "$(root_of "$ifb")" "tbf 1000000 20000"
t_is "ifb is up with the veth's MTU" "$(ip -n "$hn" -j link show "$ifb" | jq -r '.[0].mtu, (.[0].flags|index("UP") != null)' | tr '\n' ' ')" "1500 true "
t_like "ingress qdisc redirects the veth's ingress to the ifb" \
	"$(ip netns exec "$hn" tc filter show dev tbwh0 ingress)" "mirred \(Egress Redirect to device $ifb\)"
t_is "tbf queue limit is 25 ms at the rate plus the burst" \
	"$(qd tbwh0 | jq -r '.[] | select(.root) | .options.lat')" 25000

bw_run CHECK c1 <<<"$(conf "$lim")"
t_is "CHECK passes" "$RC:$OUT" "0:"

slow "into the container: 2 MB at 8 Mbit/s is shaped" "$(xfer "$hn" "$cn" 10.200.81.2)"
slow "out of the container: 2 MB at 8 Mbit/s is shaped" "$(xfer "$cn" "$hn" 10.200.81.1)"

ip netns exec "$hn" tc qdisc change dev tbwh0 root tbf rate 16mbit burst 20000 latency 25ms
bw_run CHECK c1 <<<"$(conf "$lim")"
t_err "CHECK sees a changed rate" 999 'tbf rate is 2000000, configured 1000000'
bw_run CHECK c1 <<<"$(conf '"ingressRate":8000000,"ingressBurst":80000,"egressRate":8000000,"egressBurst":160000')"
t_err "CHECK compares against the configuration" 999 'tbwh0: tbf rate'

bw_run DEL c1 <<<"$(conf "$lim")"
t_is "DEL exits 0" "$RC:$OUT" "0:"
t_is "DEL removes the ifb and the veth's qdiscs" "$(hstate)" "$clean"
fast "unshaped after DEL" "$(xfer "$hn" "$cn" 10.200.81.2)"
bw_run DEL c1 <<<"$(conf "$lim")"
t_is "DEL again succeeds" "$RC:$OUT" "0:"
bw_run CHECK c1 <<<"$(conf "$lim")"
t_err "CHECK fails after DEL" 999 'no tbf qdisc'

# The "bandwidth" capability, one direction only.
bw_run ADD c2 <<<"$(conf '"runtimeConfig":{"bandwidth":{"ingressRate":16000000,"ingressBurst":80000}}')"
t_is "capability ADD" "$RC" 0
t_is "tbf from runtimeConfig.bandwidth" "$(root_of tbwh0)" "tbf 2000000 10000"
t_is "no ifb without an egress limit" "$(ip -n "$hn" -br link | grep -c bwp)" 0
bw_run CHECK c2 <<<"$(conf '"runtimeConfig":{"bandwidth":{"ingressRate":16000000,"ingressBurst":80000}}')"
t_is "capability CHECK" "$RC:$OUT" "0:"
bw_run DEL c2 <<<"$(conf '"runtimeConfig":{"bandwidth":{"ingressRate":16000000,"ingressBurst":80000}}')"
t_is "capability DEL" "$RC:$(hstate)" "0:$clean"

# Config fields win over the capability, as in the reference.
bw_run ADD c3 <<<"$(conf '"egressRate":8000000,"egressBurst":80000,"runtimeConfig":{"bandwidth":{"ingressRate":16000000,"ingressBurst":80000}}')"
t_is "config over capability: no ingress tbf" "$RC:$(root_of tbwh0)" "0:noqueue null null"
t_is "config over capability: egress tbf" "$(root_of "$(ifb_of c3)")" "tbf 1000000 10000"
bw_run DEL c3 <<<"$(conf '"egressRate":8000000,"egressBurst":80000')"
t_is "DEL c3" "$RC:$(hstate)" "0:$clean"

# No limits: prevResult passes through, nothing is created.
bw_run ADD c4 <<<"$(conf '"ingressRate":0,"ingressBurst":0')"
t_is "no limits: passthrough" "$RC:$(printf '%s' "$OUT" | jq -c '[.interfaces[].name]'):$(hstate)" "0:[\"tbwh0\",\"tbwc0\"]:$clean"

# unshapedSubnets: htb, traffic with 10.200.82.0/24 exempt both ways.
sub='"ingressRate":8000000,"ingressBurst":160000,"egressRate":8000000,"egressBurst":160000,"unshapedSubnets":["10.200.82.0/24"]'
bw_run ADD c5 <<<"$(conf "$sub")"
t_is "ADD with unshapedSubnets" "$RC" 0
t_is "htb at the root, default class 1:48" \
	"$(qd tbwh0 | jq -r '.[] | select(.root) | .kind + " " + .options.default')" "htb 0x30"
t_like "class 1:48 at 8 Mbit/s, 1:1 uncapped" \
	"$(ip netns exec "$hn" tc class show dev tbwh0 | sort)" 'class htb 1:1 .*rate 100Gbit.*class htb 1:30 .*rate 8Mbit'
t_like "u32 filter sends the subnet (as source) to 1:1" \
	"$(ip netns exec "$hn" tc filter show dev tbwh0 parent 1:)" 'flowid 1:1.*match 0ac85200/ffffff00 at 12'
t_like "on the ifb the subnet is the destination" \
	"$(ip netns exec "$hn" tc filter show dev "$(ifb_of c5)" parent 1:)" 'match 0ac85200/ffffff00 at 16'
bw_run CHECK c5 <<<"$(conf "$sub")"
t_is "CHECK with subnets" "$RC:$OUT" "0:"
slow "out of the container to a shaped address" "$(xfer "$cn" "$hn" 10.200.81.1)"
fast "out of the container to an unshaped subnet" "$(xfer "$cn" "$hn" 10.200.82.1)"
ip -n "$hn" route replace 10.200.81.2/32 dev tbwh0 src 10.200.82.1
fast "into the container from an unshaped subnet" "$(xfer "$hn" "$cn" 10.200.81.2)"
ip -n "$hn" route del 10.200.81.2/32 dev tbwh0
bw_run DEL c5 <<<"$(conf "$sub")"
t_is "DEL with subnets" "$RC:$(hstate)" "0:$clean"

# shapedSubnets: only traffic with them is limited.
bw_run ADD c6 <<<"$(conf '"ingressRate":8000000,"ingressBurst":160000,"shapedSubnets":["10.200.82.0/24","fd00:200:80::/64"]')"
t_is "ADD with shapedSubnets" "$RC" 0
t_is "default class is the uncapped 1:1" \
	"$(qd tbwh0 | jq -r '.[] | select(.root) | .options.default')" "0x1"
t_like "an IPv6 filter at priority 15" "$(ip netns exec "$hn" tc filter show dev tbwh0 parent 1:)" 'protocol ipv6 pref 15 u32'
fast "into the container from a non-shaped address" "$(xfer "$hn" "$cn" 10.200.81.2)"
ip -n "$hn" route replace 10.200.81.2/32 dev tbwh0 src 10.200.82.1
slow "into the container from a shaped subnet" "$(xfer "$hn" "$cn" 10.200.81.2)"
ip -n "$hn" route del 10.200.81.2/32 dev tbwh0
bw_run CHECK c6 <<<"$(conf '"ingressRate":8000000,"ingressBurst":160000,"shapedSubnets":["10.200.82.0/24","fd00:200:80::/64"]')"
t_is "CHECK with shapedSubnets" "$RC:$OUT" "0:"
bw_run DEL c6 <<<"$(conf '"ingressRate":8000000,"ingressBurst":160000,"shapedSubnets":["10.200.82.0/24"]')"
t_is "DEL with shapedSubnets" "$RC:$(hstate)" "0:$clean"

# Bad values: code 7 naming the field, nothing created.
bad() {
	bw_run ADD cbad <<<"$(conf "$2")"
	t_err "$1" 7 "$3"
	t_is "$1: nothing applied" "$(hstate)" "$clean"
}
bad "negative ingressRate" '"ingressRate":-1,"ingressBurst":100' '^ingressRate: must not be negative'
bad "negative egressBurst" '"egressRate":1000,"egressBurst":-8' '^egressBurst: must not be negative'
bad "zero rate with a burst" '"ingressRate":0,"ingressBurst":100000' '^ingressRate: must be set'
bad "rate without burst" '"egressRate":8000000' '^egressBurst: must be set'
bad "rate under 8 bit/s" '"egressRate":7,"egressBurst":8000' '^egressRate: rate must be at least 8'
bad "burst of 0 bytes" '"ingressRate":8000000,"ingressBurst":7' '^ingressBurst: burst must be at least 8'
bad "burst over 4 GB" '"ingressRate":8000000,"ingressBurst":34359738368' '^ingressBurst: burst cannot be more than 4GB'
bad "burst too long for the rate" '"ingressRate":800,"ingressBurst":8000' '^ingressBurst: burst takes longer'
bad "string rate" '"ingressRate":"8m","ingressBurst":8000' '^ingressRate: '
bad "bad capability value" '"runtimeConfig":{"bandwidth":{"egressRate":-5,"egressBurst":100}}' '^runtimeConfig\.bandwidth\.egressRate'
bad "malformed subnet" '"ingressRate":8000,"ingressBurst":8000,"unshapedSubnets":["10.200.82.0/33"]' '^unshapedSubnets\[0\]'
bad "both subnet lists" '"ingressRate":8000,"ingressBurst":8000,"unshapedSubnets":["10.200.82.0/24"],"shapedSubnets":["10.200.83.0/24"]' 'cannot both be set'

# DEL with a value ADD would refuse still deletes the ifb.
bw_run ADD c10 <<<"$(conf '"egressRate":8000000,"egressBurst":80000')"
bw_run DEL c10 <<<"$(conf '"egressRate":-1,"egressBurst":80000')"
t_is "DEL with a bad config still removes the ifb and its redirect" "$RC:$(hstate)" "0:$clean"

bw_run ADD c7 <<<'{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","ingressRate":8000,"ingressBurst":8000}'
t_err "ADD without prevResult" 7 'prevResult'

# A failure half-way: an ingress qdisc already on the veth makes the
# egress part fail; the ingress tbf and the ifb are rolled back.
ip netns exec "$hn" tc qdisc add dev tbwh0 ingress
pre=$(hstate)
bw_run ADD c8 <<<"$(conf "$lim")"
t_err "ADD fails on an existing ingress qdisc" 999 'ingress qdisc'
t_is "and leaves the host as it was" "$(hstate)" "$pre"
ip netns exec "$hn" tc qdisc del dev tbwh0 ingress

# A container interface that is not a veth.
ip -n "$cn" link add tbwc1 type bridge 2>/dev/null || ip -n "$cn" link add tbwc1 type ifb
OUT=$(ip netns exec "$hn" env CNI_COMMAND=ADD CNI_NETNS="$cont" CNI_IFNAME=tbwc1 CNI_CONTAINERID=c9 \
	CNI_PATH="$CNI_PATH" "$T_BIN/bandwidth" 2>/dev/null <<<"$(conf "$lim")"); RC=$?
t_err "container interface without a veth peer" 999 'has no veth peer'

t_done
