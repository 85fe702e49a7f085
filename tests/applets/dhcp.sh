#!/usr/bin/env bash
# dhcp: the IPAM applet and its lease daemon against a real DHCP server.
#
# dnsmasq serves a bridge in a "server" namespace; containers are
# namespaces whose eth0 is a veth into that bridge. One more container's
# eth0 leads to a namespace with no server at all (a silent server). The
# daemon runs in the background with its socket and state under $T_TMP.
# Covered: ADD with router, DNS and domain; provide from CNI_ARGS; ADD
# again; CHECK; a silent server not blocking another container; renewal
# (dnsmasq sends T1=10s, T2=15s); a container deleted without DEL being
# forgotten; restart from the state files; DEL releasing (dnsmasq's lease
# file); GC; bad config; daemon flags; daemon down (ADD fails fast, code
# 11; STATUS 50); the host unchanged.
# First, without dnsmasq: a wedged daemon (stopped, so it accepts nothing;
# a fake one that takes the request and never finishes its reply; one
# whose listen queue is full) fails the plugin after its bound, shortened
# here with CNI_TEST_DHCP_TIMEOUT.
#
# Only namespaces and links it creates (tdh*, cni-t<pid>-*), 10.200.90.0/24;
# dnsmasq runs and binds only inside the server namespace. Everything is
# undone by t_defer.
. "$CNI_TESTS/lib.sh"

now_ms() { date +%s%3N; }

# --- a wedged daemon: the plugin gives up after its bound ---
WNS=$(t_netns w)
wconf() { # SOCKET
	jq -nc --arg s "$1" '{cniVersion: "1.1.0", name: "dnet", type: "macvlan",
		master: "tdhnone", ipam: {type: "dhcp", daemonSocketPath: $s}}'
}
# wedged DESC CMD CODE SOCKET: CMD fails with CODE after the 1s bound,
# naming SOCKET.
wedged() {
	local t0 t1 ns= ifn= id=
	[ "$2" = STATUS ] || { ns=$WNS; ifn=eth0; id=ctrW; }
	t0=$(now_ms)
	CNI_TEST_DHCP_TIMEOUT=1 cni_run dhcp "$2" "$ns" "$ifn" "$id" <<<"$(wconf "$4")"
	t1=$(now_ms)
	t_err "$1: $2 fails with code $3 naming the socket" "$3" \
		"^no reply from the DHCP daemon at \Q$4\E .*gave up after 1s"
	t_ok "... after the bound (took $((t1 - t0))ms)" \
		test $((t1 - t0)) -ge 900 -a $((t1 - t0)) -lt 3000
}
WSOCK=$T_TMP/wedged.sock
"$CNI_BIN" dhcp daemon -socketpath "$WSOCK" -statedir "$T_TMP/wstate" \
	</dev/null >/dev/null 2>"$T_TMP/wedged.log" &
WPID=$!
t_defer "kill -CONT $WPID; kill $WPID"
for _ in $(seq 50); do [ -S "$WSOCK" ] && break; sleep 0.1; done
cni_run dhcp STATUS "" "" "" <<<"$(wconf "$WSOCK")"
t_is "STATUS passes while the daemon runs" "$RC:$OUT" "0:"
kill -STOP "$WPID"
wedged "stopped daemon" ADD 11 "$WSOCK"
wedged "stopped daemon" DEL 11 "$WSOCK"
wedged "stopped daemon" STATUS 50 "$WSOCK"
kill -CONT "$WPID"
cni_run dhcp STATUS "" "" "" <<<"$(wconf "$WSOCK")"
t_is "the daemon, running again, answers STATUS" "$RC:$OUT" "0:"
kill "$WPID"; wait "$WPID"

# fake_daemon MODE SOCKET: a fake daemon in the background. partial:
# accepts, reads the request, starts a reply and never ends it. full: never
# accepts, and fills its own listen queue so that connect() blocks.
fake_daemon() {
	perl -MIO::Socket::UNIX -MSocket -e '
		my ($mode, $path) = @ARGV;
		my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $path,
			Listen => $mode eq "full" ? 0 : 16) or die "listen: $!";
		my @keep;
		if ($mode eq "full") {
			for (;;) {
				my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM()) or die;
				$s->blocking(0);
				connect($s, pack_sockaddr_un($path)) or last;
				push @keep, $s;
			}
		}
		open(my $f, ">", "$path.ready") or die; close($f);
		if ($mode eq "full") { sleep; }
		while (my $c = $l->accept) {
			my $req = <$c>; $c->autoflush(1); print $c q({"ok":); push @keep, $c;
		}
	' "$1" "$2" </dev/null >/dev/null 2>>"$T_TMP/fake.log" &
	t_defer "kill $!"
	for _ in $(seq 50); do [ -e "$2.ready" ] && return 0; sleep 0.1; done
	return 1
}
fake_daemon partial "$T_TMP/partial.sock"
wedged "a daemon that never finishes its reply" ADD 11 "$T_TMP/partial.sock"
wedged "a daemon that never finishes its reply" STATUS 50 "$T_TMP/partial.sock"
fake_daemon full "$T_TMP/full.sock"
wedged "a daemon whose listen queue is full" ADD 11 "$T_TMP/full.sock"

if ! command -v dnsmasq >/dev/null; then
	t_skip "dhcp against dnsmasq" "dnsmasq not installed"
	t_done
fi

SOCK=$T_TMP/dhcp.sock
STATE=$T_TMP/state
LEASES=$T_TMP/leases
DLOG=$T_TMP/daemon.log
SLOG=$T_TMP/dnsmasq.log

# dh_ns X: namespace tdh<pid>X, deleted at exit; echoes its name.
dh_ns() {
	local n="tdh$$$1"
	ip netns add "$n" || return 1
	t_defer "ip netns del $n"
	ip -n "$n" link set lo up
	echo "$n"
}
SRV=$(dh_ns s)
NOSRV=$(dh_ns x)
ip -n "$SRV" link add tdhbr0 type bridge
ip -n "$SRV" addr add 10.200.90.1/24 dev tdhbr0
ip -n "$SRV" link set tdhbr0 up

# container X [NS]: a namespace whose eth0 leads to the bridge (or, with
# NS, to a bare veth end in NS); echoes the CNI_NETNS path.
container() {
	local c n
	c=$(dh_ns "$1") || return 1
	if [ -n "${2-}" ]; then
		ip -n "$2" link add "tdhp$1" type veth peer name eth0 netns "$c"
		ip -n "$2" link set "tdhp$1" up
	else
		ip -n "$SRV" link add "tdhp$1" type veth peer name eth0 netns "$c"
		ip -n "$SRV" link set "tdhp$1" master tdhbr0 up
	fi
	echo "/run/netns/$c"
}
A=$(container a)
B=$(container b "$NOSRV")
C=$(container c)
ip -n "${C##*/}" link set eth0 address 02:00:00:00:90:0c
D=$(container d)

# Container C alone (by MAC) gets option 121: an on-link route and a
# default route through another router.
ROUTES_121=10.201.0.0/16,0.0.0.0,0.0.0.0/0,10.200.90.254
ip netns exec "$SRV" dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 --no-ping \
	--interface=tdhbr0 --bind-interfaces --except-interface=lo \
	--dhcp-range=10.200.90.50,10.200.90.99,2m \
	--dhcp-option=option:dns-server,10.200.90.1 --dhcp-option=option:domain-name,dh.test \
	--dhcp-option=option:T1,10 --dhcp-option=option:T2,15 \
	--dhcp-mac=set:cls,02:00:00:00:90:0c \
	--dhcp-option=tag:cls,option:classless-static-route,"$ROUTES_121" \
	--dhcp-leasefile="$LEASES" --pid-file="$T_TMP/dnsmasq.pid" \
	--log-dhcp --log-facility="$SLOG" --user=root --group=root \
	</dev/null >/dev/null 2>"$T_TMP/dnsmasq.err" &
t_defer "kill $!"
for _ in $(seq 50); do [ -s "$T_TMP/dnsmasq.pid" ] && break; sleep 0.1; done
t_defer "kill $(cat "$T_TMP/dnsmasq.pid" 2>/dev/null)"
t_ok "dnsmasq runs in the server namespace" test -s "$T_TMP/dnsmasq.pid"

# Both run in this shell (never inside $(...)): the daemon is its child.
start_daemon() {
	"$CNI_BIN" dhcp daemon -socketpath "$SOCK" -statedir "$STATE" -resendtimeout 6s "$@" \
		</dev/null >/dev/null 2>>"$DLOG" &
	echo $! >"$T_TMP/daemon.pid"
	for _ in $(seq 50); do [ -S "$SOCK" ] && return 0; sleep 0.1; done
	return 1
}
stop_daemon() {
	local p
	p=$(cat "$T_TMP/daemon.pid")
	kill -TERM "$p" && wait "$p"
}
t_defer 'kill $(cat '"$T_TMP"'/daemon.pid)'
start_daemon
t_is "daemon starts" "$?" 0

# conf [IPAM_OVERRIDES]: the plugin config with the dhcp IPAM section.
conf() {
	jq -nc --arg s "$SOCK" --argjson x "${1:-{\}}" '{cniVersion: "1.0.0", name: "dnet",
		type: "macvlan", master: "tdhnone",
		ipam: ({type: "dhcp", daemonSocketPath: $s} + $x)}'
}
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
acks() { grep -c "DHCPACK(tdhbr0) $1 " "$SLOG"; }
in_leases() { grep -q " $1 " "$LEASES"; }

CONF=$(conf)
PCONF=$(conf '{"provide": [{"option": "host-name", "fromArg": "K8S_POD_NAME"}]}')

# --- ADD: address, gateway, routes, DNS ---
cni_run dhcp ADD "$A" eth0 ctrA "IgnoreUnknown=1;K8S_POD_NAME=pod-a" <<<"$PCONF"
t_is "ADD exits 0" "$RC" 0
RES_A=$OUT
IP_A=$(jq -r '.ips[0].address' <<<"$OUT" | cut -d/ -f1)
t_like "address from the dnsmasq range" "$(jq -r '.ips[0].address' <<<"$OUT")" \
	'^10\.200\.90\.([5-9][0-9])/24$'
t_json "gateway is the router option" '.ips[0].gateway' 10.200.90.1
t_json "default route via the router" '.routes | map(.dst + " " + .gw) | join(",")' \
	"0.0.0.0/0 10.200.90.1"
t_json "DNS server in the result" '.dns.nameservers | join(",")' 10.200.90.1
t_json "domain in the result" '.dns.domain' dh.test
t_json "no interfaces (IPAM)" '.interfaces // [] | length' 0
t_json "result in the config's version" .cniVersion 1.0.0
t_ok "dnsmasq's lease file has the address" in_leases "$IP_A"
t_like "host-name provided from CNI_ARGS" "$(cat "$SLOG")" 'client provides name: pod-a'
t_like "client id is containerID/network/ifname" "$(cat "$LEASES")" \
	"$IP_A pod-a 00:63:74:72:41:2f:64:6e:65:74:2f:65:74:68:30"
t_ok "state file written" test "$(ls "$STATE" | wc -l)" -eq 1
# As the interface plugin would: renewals are unicast to this address.
ip -n "${A##*/}" addr add "$IP_A/24" dev eth0

cni_run dhcp ADD "$A" eth0 ctrA <<<"$CONF"
t_is "ADD again returns the same lease" "$RC:$(jq -r '.ips[0].address' <<<"$OUT")" \
	"0:$IP_A/24"
cni_run dhcp CHECK "$A" eth0 ctrA <<<"$(with_prev "$CONF" "$RES_A")"
t_is "CHECK passes" "$RC:$OUT" "0:"
cni_run dhcp CHECK "$A" eth0 ctrA \
	<<<"$(with_prev "$CONF" "$(jq -c '.ips[0].address = "10.200.90.3/24"' <<<"$RES_A")")"
t_err "CHECK fails when prevResult has another address" 999 'not in prevResult'

# --- a silent server only delays its own container ---
t0=$(now_ms)
cni_run_bg() {
	CNI_COMMAND=ADD CNI_NETNS=$B CNI_IFNAME=eth0 CNI_CONTAINERID=ctrB CNI_PATH=$CNI_PATH \
		"$T_BIN/dhcp" <<<"$CONF" >"$T_TMP/b.out" 2>/dev/null
	echo $? >"$T_TMP/b.rc"
}
cni_run_bg &
BGPID=$!
sleep 0.3
cni_run dhcp ADD "$C" eth0 ctrC <<<"$(conf '{"priority": 5}' | jq -c '.cniVersion = "1.1.0"')"
t1=$(now_ms)
t_is "ADD in another container succeeds meanwhile" "$RC" 0
t_json "routes from option 121 replace the router's (priority set)" \
	'.routes | map(.dst + " " + .gw + " " + (.scope // "-" | tostring) + " " +
		(.priority | tostring)) | join(",")' \
	"10.201.0.0/16 0.0.0.0 253 5,0.0.0.0/0 10.200.90.254 - 5"
IP_C=$(jq -r '.ips[0].address' <<<"$OUT" | cut -d/ -f1)
t_ok "... within 3s (took $((t1 - t0))ms)" test $((t1 - t0)) -lt 3000
t_ok "... and got its own address" test "$IP_C" != "$IP_A"
t_ok "the silent server's ADD is still waiting" kill -0 "$BGPID"
wait "$BGPID"
t2=$(now_ms)
OUT=$(cat "$T_TMP/b.out") RC=$(cat "$T_TMP/b.rc")
t_err "ADD with no server fails after -resendtimeout" 999 'no DHCP lease for eth0.*DHCPOFFER'
t_ok "... which was 6s (took $((t2 - t0))ms)" test $((t2 - t0)) -ge 5500
cni_run dhcp CHECK "$B" eth0 ctrB <<<"$CONF"
t_err "... and keeps no lease" 999 'no DHCP lease'
ip -n "${C##*/}" addr add "$IP_C/24" dev eth0

# --- a container that disappears without DEL ---
cni_run dhcp ADD "$D" eth0 ctrD <<<"$CONF"
t_is "ADD in a container about to vanish" "$RC" 0
ip netns del "${D##*/}"

# --- renewal at T1 ---
for _ in $(seq 250); do
	[ "$(acks "$IP_A")" -ge 2 ] && grep -q 'ctrD/dnet/eth0: container gone' "$DLOG" && break
	sleep 0.1
done
t_ok "lease renewed at T1 (dnsmasq ACKed again)" test "$(acks "$IP_A")" -ge 2
t_like "the daemon logged the renewal" "$(cat "$DLOG")" 'ctrA/dnet/eth0: renewed 10\.200\.90\.'
t_like "the vanished container's lease is forgotten" "$(cat "$DLOG")" \
	'ctrD/dnet/eth0: container gone'
t_is "state files: A and C" "$(ls "$STATE" | wc -l)" 2
cni_run dhcp CHECK "$A" eth0 ctrA <<<"$(with_prev "$CONF" "$RES_A")"
t_is "CHECK passes after renewal" "$RC:$OUT" "0:"

# --- restart: leases come back from the state directory ---
stop_daemon
t_is "daemon stops on SIGTERM" "$?" 0
t_nok "socket removed" test -e "$SOCK"
t_is "leases kept on stop" "$(ls "$STATE" | wc -l)" 2
start_daemon
t_is "daemon starts again" "$?" 0
t_like "leases resumed" "$(cat "$DLOG")" "ctrA/dnet/eth0: resumed lease on $IP_A"
cni_run dhcp CHECK "$A" eth0 ctrA <<<"$(with_prev "$CONF" "$RES_A")"
t_is "CHECK passes after restart" "$RC:$OUT" "0:"
cni_run dhcp ADD "$A" eth0 ctrA <<<"$CONF"
t_is "ADD after restart returns the lease" "$RC:$(jq -r '.ips[0].address' <<<"$OUT")" \
	"0:$IP_A/24"
n=$(acks "$IP_A")
for _ in $(seq 150); do [ "$(acks "$IP_A")" -gt "$n" ] && break; sleep 0.1; done
t_ok "renewals go on after restart" test "$(acks "$IP_A")" -gt "$n"
t_nok "a second daemon on the same socket refuses to start" \
	timeout 5 "$CNI_BIN" dhcp daemon -socketpath "$SOCK" -statedir "$T_TMP/state2"

# --- DEL releases ---
cni_run dhcp DEL "$A" eth0 ctrA <<<"$CONF"
t_is "DEL exits 0 and prints nothing" "$RC:$OUT" "0:"
for _ in $(seq 30); do in_leases "$IP_A" || break; sleep 0.1; done
t_nok "dnsmasq's lease file no longer has the address" in_leases "$IP_A"
t_like "dnsmasq saw DHCPRELEASE" "$(cat "$SLOG")" "DHCPRELEASE\\(tdhbr0\\) $IP_A "
t_is "state file removed" "$(ls "$STATE" | wc -l)" 1
cni_run dhcp DEL "$A" eth0 ctrA <<<"$CONF"
t_is "DEL again succeeds" "$RC:$OUT" "0:"
cni_run dhcp DEL "" eth0 ctrA <<<"$CONF"
t_is "DEL without CNI_NETNS succeeds" "$RC:$OUT" "0:"
cni_run dhcp CHECK "$A" eth0 ctrA <<<"$(with_prev "$CONF" "$RES_A")"
t_err "CHECK after DEL fails" 999 'no DHCP lease for ctrA/dnet/eth0'

# --- GC releases what is not a valid attachment ---
GCONF=$(jq -c '.cniVersion = "1.1.0" |
	.["cni.dev/valid-attachments"] = [{containerID: "ctrZ", ifname: "eth0"}]' <<<"$CONF")
cni_run dhcp GC "" "" "" <<<"$GCONF"
t_is "GC exits 0" "$RC:$OUT" "0:"
for _ in $(seq 30); do in_leases "$IP_C" || break; sleep 0.1; done
t_nok "GC released the stale lease" in_leases "$IP_C"
t_is "no state left" "$(ls "$STATE" | wc -l)" 0

# --- -broadcast: the server is asked to broadcast its replies ---
stop_daemon
start_daemon -broadcast
t_is "daemon starts with -broadcast" "$?" 0
n=$(grep -c 'broadcast response' "$SLOG")
cni_run dhcp ADD "$A" eth0 ctrA <<<"$CONF"
t_is "ADD with -broadcast" "$RC" 0
t_ok "dnsmasq broadcast its replies" test "$(grep -c 'broadcast response' "$SLOG")" -gt "$n"
cni_run dhcp DEL "$A" eth0 ctrA <<<"$CONF"
t_is "... and DEL" "$RC:$OUT" "0:"

# --- configuration errors never reach the daemon ---
cni_run dhcp ADD "$A" eth0 ctrA <<<"$(conf '{"provide": [{"option": "bogus", "value": "x"}]}')"
t_err "unknown provide option" 7 'ipam.provide\[0\].option'
cni_run dhcp ADD "$A" eth0 ctrA <<<"$(conf '{"request": [{"option": "300"}]}')"
t_err "request option out of range" 7 'ipam.request\[0\].option'
cni_run dhcp ADD "$A" eth0 ctrA <<<"$(conf '{"provide": [{"option": "53", "value": "1"}]}')"
t_err "an option the client manages" 7 'managed by the client'
cni_run dhcp ADD "$A" eth0 ctrA <<<"$(conf '{"daemonSocketPath": 5}')"
t_err "daemonSocketPath must be a string" 7 'ipam.daemonSocketPath'
cni_run dhcp ADD "$A" eth1 ctrA <<<"$CONF"
t_err "ADD on a missing interface" 999 'eth1.*No such device'

# --- daemon flags ---
t_ok "daemon -h prints usage" "$CNI_BIN" dhcp daemon -h
"$CNI_BIN" dhcp daemon -nosuchflag >/dev/null 2>&1
t_is "unknown daemon flag exits 2" "$?" 2
"$CNI_BIN" dhcp daemon -timeout 5x >/dev/null 2>&1
t_is "bad duration exits 2" "$?" 2

# --- daemon down ---
cni_run dhcp STATUS "" "" "" <<<"$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")"
t_is "STATUS passes while the daemon runs" "$RC:$OUT" "0:"
stop_daemon
t0=$(now_ms)
cni_run dhcp ADD "$A" eth0 ctrA <<<"$CONF"
t1=$(now_ms)
t_err "ADD with the daemon down fails with code 11" 11 'DHCP daemon.*cni dhcp daemon'
t_ok "... fast (took $((t1 - t0))ms)" test $((t1 - t0)) -lt 1000
cni_run dhcp STATUS "" "" "" <<<"$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")"
t_err "STATUS with the daemon down is code 50" 50 'error dialing DHCP daemon'
cni_run dhcp DEL "$A" eth0 ctrA <<<"$CONF"
t_err "DEL with the daemon down is code 11" 11 'DHCP daemon'

# --- systemd socket activation ---
if command -v systemd-socket-activate >/dev/null; then
	systemd-socket-activate -l "$SOCK" "$CNI_BIN" dhcp daemon -statedir "$STATE" \
		</dev/null >/dev/null 2>>"$DLOG" &
	echo $! >"$T_TMP/daemon.pid"
	for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
	cni_run dhcp STATUS "" "" "" <<<"$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")"
	t_is "socket activation: STATUS through the socket systemd passed" "$RC:$OUT" "0:"
	t_like "... which the daemon used" "$(cat "$DLOG")" 'listening on the socket from systemd'
	stop_daemon
	t_ok "... and left in place for systemd" test -S "$SOCK"
else
	t_skip "socket activation" "systemd-socket-activate not installed"
fi

# Other tests may change the host meanwhile: look for our traces only.
t_is "nothing of ours on the host" \
	"$(ip -br link | grep -c tdh) $(ip -br addr | grep -c '10\.200\.90\.')" "0 0"
t_done
