#!/usr/bin/env bash
# Input hardening: what comes from configurations, the environment and the
# state directories never escapes where it belongs.
#
#  - plugin and IPAM types are file names, and never a cni tool;
#  - container ids, interface and network names are checked before they
#    become file or device names; an interface name with a quote is safe
#    in netfilter rules;
#  - tuning writes only net.* sysctls of the container (DEL's restore
#    included), and its GC and STATUS accept IFNAME keys;
#  - state files are 0600 in 0700 directories, read without following a
#    symlink or waiting on a FIFO: the result cache, host-local's store,
#    tuning's backups, the dhcp daemon's leases; the configuration
#    directory is read without waiting on a FIFO either;
#  - reads are bounded;
#  - an ADD that dies half-way leaves a cache entry naming it.
# Bridges and rules live in a namespace that plays the host.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/chain/helpers.sh"

for tool in jq nft; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "hardening" "$tool not installed"
		t_done
	fi
done
ch_host h || { t_fail "create the host namespace"; t_done; }
S=$T_TMP/state
mkdir -p "$S"

# hrun APPLET CMD NETNS IFNAME ID: cni_run in the host namespace.
hrun() {
	local ef="$T_TMP/hrun.err"
	OUT=$(ip netns exec "$CH_HN" env CNI_COMMAND="$2" CNI_NETNS="$3" CNI_IFNAME="$4" \
		CNI_CONTAINERID="$5" CNI_PATH="$T_BIN" "$T_BIN/$1" 2>"$ef")
	RC=$?
	ERR=$(cat "$ef")
}
br() { # br IPAM_JSON: a bridge config (bridge tcr$$h, 10.200.114.0/24)
	printf '{"cniVersion":"1.1.0","name":"tcr-h","type":"bridge","bridge":"tcr%sh","ipam":%s}' "$$" "$1"
}
hl='{"type":"host-local","dataDir":"'"$S"'/ipam","ranges":[[{"subnet":"10.200.114.0/24"}]]}'
C1=$(t_netns c1)

# --- Types -----------------------------------------------------------------
hrun bridge ADD "$C1" eth0 h1 <<<"$(br '{"type":"../../../bin/sh"}')"
t_err "ipam.type with a path is refused" 7 'ipam\.type: invalid plugin type'
hrun bridge ADD "$C1" eth0 h1 <<<"$(br '{"type":"cnitool"}')"
t_err "ipam.type naming a cni tool is refused" 7 'ipam\.type: "cnitool" is a cni tool'
hrun bridge ADD "$C1" eth0 h1 <<<"$(br '{"type":"add"}')"
t_err "  (add, linked into CNI_PATH by cni --install, too)" 7 'is a cni tool'
t_nok "  and the container got no interface" ip -n "${C1##*/}" link show eth0

# --- Names -----------------------------------------------------------------
for id in '../x' 'a/b' '.hidden' "$(printf 'a\nb')"; do
	hrun host-local ADD "$C1" eth0 "$id" <<<'{"cniVersion":"1.1.0","name":"tcr-h","ipam":'"$hl"'}'
	t_err "container id $(printf %q "$id") is refused" 4 'invalid container id'
done
for ifn in '../x' 'a/b' '..' 'a:b' 'a b' 'abcdefghijklmnop'; do
	hrun host-local ADD "$C1" "$ifn" h1 <<<'{"cniVersion":"1.1.0","name":"tcr-h","ipam":'"$hl"'}'
	t_err "interface name '$ifn' is refused" 4 'CNI_IFNAME'
done
for net in '../x' '.x' 'a/b' ''; do
	hrun host-local ADD "$C1" eth0 h1 <<<'{"cniVersion":"1.1.0","name":"'"$net"'","ipam":'"$hl"'}'
	t_err "network name '$net' is refused" 7 'network name'
done
t_is "  and nothing reached the disk" "$(find "$S" -mindepth 1 | wc -l)" 0
# An interface name with a quote goes into nftables comments: harmless.
ch_conflist "$S/q.conflist" tcr-q nftables "tcr$$q" 10.200.115 "$S/q"
chx "$S/q.conflist" add "$C1" --id '../../x'
t_err "cni exec --id ../../x is refused" 4 'invalid container id'
chx "$S/q.conflist" --cache-dir "$S/q/cache" --cni-path "$T_BIN" add "$C1" -i 'e"0;x' \
	--cap-args "$(ch_ports 200)" -q
t_is "ADD with interface name 'e\"0;x' (nftables rules)" "$RC:$ERR" "0:"
t_like "  its rules carry a sanitized comment" "$(hx nft list ruleset)" 'if e_0;x id'
chx "$S/q.conflist" --cache-dir "$S/q/cache" --cni-path "$T_BIN" del "$C1" -i 'e"0;x' -q
t_is "  and DEL removes them" "$RC:$(hx nft list ruleset | grep -c 'e_0')" "0:0"

# --- tuning ----------------------------------------------------------------
tn() { printf '{"cniVersion":"1.1.0","name":"tcr-t","type":"tuning","dataDir":"%s/tuning"%s,"prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"%s"}]}}' "$S" "$1" "$C1"; }
ip -n "${C1##*/}" link add eth0 type veth peer name eth1
host_smc=$(cat /proc/sys/net/core/somaxconn)
cni_run tuning ADD "$C1" eth0 t1 <<<"$(tn ',"sysctl":{"net.core.somaxconn":"777","net.ipv4.conf.IFNAME.arp_ignore":"2"}')"
t_is "tuning ADD" "$RC" 0
t_is "  sets the sysctls in the container" \
	"$(ip netns exec "${C1##*/}" cat /proc/sys/net/core/somaxconn /proc/sys/net/ipv4/conf/eth0/arp_ignore | tr '\n' ' ')" "777 2 "
t_is "  and not on the host" "$(cat /proc/sys/net/core/somaxconn)" "$host_smc"
t_is "  its backup is 0600 in a 0700 directory" \
	"$(stat -c %a "$S/tuning" "$S/tuning/t1_eth0.json" | tr '\n' ' ')" "700 600 "
cni_run tuning DEL "$C1" eth0 t1 <<<"$(tn '')"
t_is "  DEL restores" "$RC:$(ip netns exec "${C1##*/}" cat /proc/sys/net/core/somaxconn)" "0:4096"
for cmd in GC STATUS; do
	OUT=$(tn ',"sysctl":{"net.ipv4.conf.IFNAME.arp_ignore":"1"}' | jq -c 'del(.prevResult)' |
		CNI_COMMAND=$cmd CNI_PATH="$T_BIN" "$T_BIN/tuning" 2>&1)
	t_is "tuning $cmd with an IFNAME sysctl (no CNI_IFNAME)" "$?:$OUT" "0:"
done
# A backup that is a symlink is not followed (it would set the MTU).
echo '{"mtu":1280}' >"$T_TMP/evil.json"
ln -s "$T_TMP/evil.json" "$S/tuning/t2_eth0.json"
cni_run tuning DEL "$C1" eth0 t2 <<<"$(tn '')"
t_is "tuning DEL does not follow a symlinked backup" \
	"$RC:$(ip -n "${C1##*/}" -o link show eth0 | grep -o 'mtu [0-9]*')" "0:mtu 1500"
# A backup (tampered with) naming a sysctl outside net is not restored.
echo '{"sysctl":{"kernel/cni_test_nonexistent":{"old":"1","new":"0"},"net/../kernel/x":{"old":"1","new":"0"}}}' \
	>"$S/tuning/t3_eth0.json"
cni_run tuning DEL "$C1" eth0 t3 <<<"$(tn '')"
t_is "tuning DEL of a backup naming kernel sysctls succeeds" "$RC" 0
t_is "  refusing both keys" "$(grep -c 'only keys under net' <<<"$ERR")" 2

# --- The result cache --------------------------------------------------------
RC_DIR=$S/cache
cat >"$S/lo.conflist" <<'EOF'
{"cniVersion":"1.1.0","name":"tcr-lo","plugins":[{"type":"loopback"}]}
EOF
lx() { chx "$S/lo.conflist" --cache-dir "$RC_DIR" "$@"; }
lx add "$C1" --id lo1 -q
t_is "cache: the entry is 0600, its directories 0700" \
	"$(stat -c %a "$RC_DIR/results" "$RC_DIR/locks" "$RC_DIR/results/tcr-lo-lo1-eth0" | tr '\n' ' ')" "700 700 600 "
mv "$RC_DIR/results/tcr-lo-lo1-eth0" "$T_TMP/entry"
ln -s "$T_TMP/entry" "$RC_DIR/results/tcr-lo-lo1-eth0"
OUT=$(timeout 10 "$CNI_BIN" list --cache-dir "$RC_DIR" 2>&1)
t_unlike "cache: a symlinked entry is not followed" "$OUT" 'lo1'
lx check "$C1" --id lo1
t_err "  (CHECK: not cached)" 3 'no cached result'
rm "$RC_DIR/results/tcr-lo-lo1-eth0"
mkfifo "$RC_DIR/results/tcr-lo-lo1-eth0"
OUT=$(timeout 10 "$CNI_BIN" exec "$S/lo.conflist" --cache-dir "$RC_DIR" del "$C1" --id lo1 2>&1)
t_is "cache: a FIFO as entry does not hang DEL" "$?" 0
rm -f "$RC_DIR/results/tcr-lo-lo1-eth0"
head -c $((2 << 20)) /dev/zero | tr '\0' ' ' >"$RC_DIR/results/tcr-lo-big-eth0"
OUT=$(timeout 10 "$CNI_BIN" list --cache-dir "$RC_DIR" 2>&1)
t_unlike "cache: a 2 MiB entry is skipped" "$?:$OUT" 'big|^[^0]'

rm -f "$RC_DIR/results/tcr-lo-big-eth0"
# Crash: the entry exists from before the first change on.
C2=$(t_netns c2)
qx() { chx "$S/q.conflist" --cache-dir "$S/q/cache" --cni-path "$T_BIN" "$@"; }
CNI_TEST_KILL_AFTER=1 qx add "$C2" --id k1 --cap-args "$(ch_ports 201)" -q
t_is "an ADD killed after its first change" "$RC" 137
OUT=$(cat "$S/q/cache/results/tcr-q-k1-eth0" 2>/dev/null)
t_json "  left a cache entry naming the attachment" \
	'[.containerId,.ifName,.netns,.capabilityArgs.portMappings[0].hostPort]|join(" ")' "k1 eth0 $C2 30201"
qx add "$C2" --id k1
t_err "  so the same ADD is refused until DEL" 4 'already attached'
qx del "$C2" --id k1 -q
t_is "  DEL removes it, and the interface" \
	"$RC:$(ls "$S/q/cache/results" | wc -l):$(ip -n "${C2##*/}" -o link | grep -c eth0)" "0:0:0"

# --- The configuration directory ---------------------------------------------
mkdir -p "$S/net.d"
cp "$S/lo.conflist" "$S/net.d/10-lo.conflist"
mkfifo "$S/net.d/20-fifo.conf"
OUT=$(timeout 10 "$CNI_BIN" show --conf-dir "$S/net.d" 2>&1)
t_like "a FIFO in the configuration directory does not hang the lookup" "$?:$OUT" '^0:.*tcr-lo'

# --- host-local's store --------------------------------------------------------
hrun host-local ADD "$C1" eth0 h1 <<<'{"cniVersion":"1.1.0","name":"tcr-h","ipam":'"$hl"'}'
t_is "host-local ADD" "$RC" 0
t_is "  the network's directory is 0700, the reservation 0600" \
	"$(stat -c %a "$S/ipam/tcr-h" "$S/ipam/tcr-h/10.200.114.2" | tr '\n' ' ')" "700 600 "
hrun host-local DEL "$C1" eth0 h1 <<<'{"cniVersion":"1.1.0","name":"tcr-h","ipam":'"$hl"'}'
mkdir -p "$T_TMP/elsewhere"
ln -s "$T_TMP/elsewhere" "$S/ipam/tcr-s"
hrun host-local ADD "$C1" eth0 h1 <<<'{"cniVersion":"1.1.0","name":"tcr-s","ipam":'"$hl"'}'
t_err "a symlink as the network's directory is refused" 5 'cannot open'
t_is "  and nothing was created where it points" "$(ls -A "$T_TMP/elsewhere" | wc -l)" 0

# --- dhcp's lease directory -----------------------------------------------------
if "$CNI_BIN" --list | grep -qx dhcp; then
	mkdir -p "$S/dhcp"
	mkfifo "$S/dhcp/0000000000000001.json"
	ln -s /etc/hostname "$S/dhcp/0000000000000002.json"
	"$CNI_BIN" dhcp daemon -socketpath "$S/dhcp.sock" -statedir "$S/dhcp" 2>"$T_TMP/dhcpd.log" &
	dpid=$!
	t_defer "kill -9 $dpid"
	for _ in $(seq 50); do [ -S "$S/dhcp.sock" ] && break; sleep 0.1; done
	OUT=$(echo '{"cniVersion":"1.1.0","name":"tcr-d","type":"macvlan","ipam":{"type":"dhcp","daemonSocketPath":"'"$S/dhcp.sock"'"}}' |
		CNI_COMMAND=STATUS CNI_PATH="$T_BIN" timeout 10 "$T_BIN/dhcp" 2>&1)
	t_is "dhcp: a FIFO and a symlink among the leases do not stall the daemon" "$?:$OUT" "0:"
	# A daemon stuck in a blocking open ignores SIGTERM (it takes signals
	# through its poll loop): SIGKILL after a grace period.
	kill "$dpid" 2>/dev/null
	for _ in $(seq 30); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
else
	t_skip "dhcp lease directory" "dhcp not built in"
fi

# --- Bounded reads -----------------------------------------------------------------
OUT=$(head -c $((5 << 20)) /dev/zero | tr '\0' ' ' | CNI_COMMAND=ADD CNI_CONTAINERID=x CNI_NETNS="$C1" \
	CNI_IFNAME=eth0 CNI_PATH="$T_BIN" "$T_BIN/loopback" 2>/dev/null)
RC=$?
t_err "a 5 MiB configuration on stdin is refused" 6 'larger than'
head -c $((5 << 20)) /dev/zero | tr '\0' ' ' >"$S/net.d/30-big.conflist"
OUT=$(timeout 10 "$CNI_BIN" exec "$S/net.d/30-big.conflist" add "$C1" 2>/dev/null)
RC=$?
t_err "a 5 MiB configuration file is refused" 6 'cannot read'
# A plugin that prints without end is cut off.
mkdir -p "$T_TMP/loud"
printf '#!/bin/sh\ncat >/dev/null\nexec yes\n' >"$T_TMP/loud/loud"
chmod +x "$T_TMP/loud/loud"
echo '{"cniVersion":"1.1.0","name":"tcr-loud","plugins":[{"type":"loud"}]}' >"$S/loud.conflist"
OUT=$(timeout 20 "$CNI_BIN" exec "$S/loud.conflist" --cache-dir "$S/lcache" --cni-path "$T_TMP/loud" add "$C1" 2>/dev/null)
RC=$?
t_err "a plugin printing without end is cut off" 5 'cannot read the output'
t_done
