# Shared by the tests of the veth plugins (bridge, ptp), as src/iface.c is
# shared by the applets. Source it after lib.sh, with VETH_APPLET naming
# the applet under test; conf() merges into $BASE, IPAM reservations are
# read from $IPAM_DIR (host-local's store):
#
#   . "$CNI_TESTS/lib.sh"
#   VETH_APPLET=ptp
#   . "$CNI_TESTS/applets/veth-lib.sh"
#   BASE=...; add "$ns" eth0 c1 "$(conf)"; t_added "ADD"; ...
#
# Nothing here creates anything but through the caller's arguments.

# Our applets first; the reference's as a fallback for IPAM types we lack.
export CNI_PATH="$T_BIN:/usr/lib/cni"

# conf OVERRIDES_JSON: the base config with OVERRIDES merged in (objects
# merge, everything else replaces).
conf() { jq -c --argjson x "${1:-{\}}" '. * $x' <<<"$BASE"; }
# with_prev CONF RESULT: CONF with prevResult.
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }

# add NETNS IFNAME ID CONF [CNI_ARGS]: ADD, and defer the matching DEL so
# that a failing test still cleans up.
N_CONF=0
add() {
	N_CONF=$((N_CONF + 1))
	local f="$T_TMP/conf.$N_CONF"
	printf '%s' "$4" >"$f"
	t_defer "CNI_COMMAND=DEL CNI_NETNS=$1 CNI_IFNAME=$2 CNI_CONTAINERID=$3 CNI_ARGS='${5-}' CNI_PATH=$CNI_PATH $T_BIN/$VETH_APPLET <$f"
	cni_run "$VETH_APPLET" ADD "$1" "$2" "$3" "${5-}" <<<"$4"
}
del() { cni_run "$VETH_APPLET" DEL "$1" "$2" "$3" "${5-}" <<<"$4"; }
# t_added DESC: the last run succeeded (showing its error if not).
t_added() {
	if [ "$RC" = 0 ]; then t_pass "$1"; else t_fail "$1" "rc=$RC" "$OUT"; fi
}

# Leftovers: veths whose peer is in namespace $1.
peers_of() { ip -o link show type veth | grep -c "link-netns ${1##*/}\b" || true; }
# IPAM reservations of network $1.
reserved() { ls "$IPAM_DIR/$1" 2>/dev/null | grep -vc '^last_reserved_ip\|^lock$' || true; }
tentative() { ip -n "${1##*/}" -6 -o addr show dev "$2" scope global | grep -c tentative || true; }

# ref_add NETNS CONF: ADD of CONF through the reference plugin $REF into
# NETNS as "ref", DEL deferred; its output in $ref, and in $shape a jq
# filter that keeps only a result's shape.
ref_add() {
	printf '%s' "$2" >"$T_TMP/ref.conf"
	t_defer "CNI_COMMAND=DEL CNI_NETNS=$1 CNI_IFNAME=eth0 CNI_CONTAINERID=ref CNI_PATH=/usr/lib/cni $REF <$T_TMP/ref.conf"
	ref=$(CNI_COMMAND=ADD CNI_NETNS=$1 CNI_IFNAME=eth0 CNI_CONTAINERID=ref CNI_PATH=/usr/lib/cni \
		"$REF" <"$T_TMP/ref.conf" 2>&1)
	shape='walk(if type == "string" then "s" elif type == "number" then 0 else . end)'
}

# libcni_driver: the libcni driver in $drv, built on first use; 1, with
# "libcni drives $VETH_APPLET" skipped, when it cannot be built.
libcni_driver() {
	drv="$CNI_BUILD/tests/libcni-driver"
	if [ ! -x "$drv" ]; then
		bash "$CNI_TESTS/libcni/build.sh" "$drv" >"$T_TMP/gobuild.log" 2>&1
	fi
	if [ ! -x "$drv" ]; then
		t_skip "libcni drives $VETH_APPLET" "libcni driver not built: $(tail -1 "$T_TMP/gobuild.log")"
		return 1
	fi
	export CNI_CACHE_DIR="$T_TMP/cache"
}
