#!/bin/sh
# Build the libcni driver (tests/libcni/driver.go) offline.
#
#   tests/libcni/build.sh OUTPUT_PATH
#
# Exit status: 0 built; 77 (automake/meson "skip") when Go or the libcni
# sources are not installed; anything else is a real build failure.
#
# The library comes from Debian's golang-github-appc-cni-dev, installed as a
# GOPATH tree under /usr/share/gocode, so the build runs in GOPATH mode
# (GO111MODULE=off): no go.mod, no module proxy, no network. It depends only
# on the Go standard library and the cni module's own packages.
#
# Overrides: GO (go binary), CNI_GOPATH (a GOPATH holding
# src/github.com/containernetworking/cni; default /usr/share/gocode).
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 OUTPUT_PATH" >&2
	exit 2
fi
out=$1
here=$(cd "$(dirname "$0")" && pwd)

go=${GO:-$(command -v go 2>/dev/null || true)}
if [ -z "$go" ] && [ -x /usr/lib/go/bin/go ]; then
	go=/usr/lib/go/bin/go
fi
if [ -z "$go" ] || ! [ -x "$go" ]; then
	echo "libcni driver: go not found (install golang-go)" >&2
	exit 77
fi

gopath=${CNI_GOPATH:-/usr/share/gocode}
if ! [ -f "$gopath/src/github.com/containernetworking/cni/libcni/api.go" ]; then
	echo "libcni driver: libcni not found under $gopath (install golang-github-appc-cni-dev)" >&2
	exit 77
fi

outdir=$(dirname "$out")
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
out="$outdir/$(basename "$out")"
work="$outdir/libcni-gobuild"
mkdir -p "$work/cache" "$work/tmp"

# Keep the build hermetic: ignore the caller's Go settings and home directory.
# GOPROXY/GOTOOLCHAIN keep newer toolchains from ever reaching the network.
cd "$here"
env GO111MODULE=off \
	GOPATH="$gopath" \
	GOCACHE="$work/cache" \
	GOTMPDIR="$work/tmp" \
	GOENV=off \
	GOFLAGS= \
	GOPROXY=off \
	GOTOOLCHAIN=local \
	GOWORK=off \
	CGO_ENABLED=0 \
	HOME="$work" \
	"$go" build -trimpath -o "$out.tmp" driver.go
mv -f "$out.tmp" "$out"
