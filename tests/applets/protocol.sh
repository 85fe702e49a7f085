#!/usr/bin/env bash
# The plugin protocol: environment, stdin, versions, error codes. Every
# failure must be a CNI error JSON on stdout, exit non-zero, host unchanged.
. "$CNI_TESTS/lib.sh"

ns=$(t_netns proto)
conf='{"cniVersion":"1.0.0","name":"pnet","type":"loopback"}'
before=$(t_host_state)

# VERSION
out=$(CNI_COMMAND=VERSION "$T_BIN/loopback" <<<'{"cniVersion":"0.4.0"}'); OUT=$out
t_json "VERSION echoes the request's version" '.cniVersion' 0.4.0
t_json "VERSION lists every supported version" '.supportedVersions|join(",")' \
	"0.1.0,0.2.0,0.3.0,0.3.1,0.4.0,1.0.0,1.1.0"
OUT=$(CNI_COMMAND=VERSION "$T_BIN/loopback" </dev/null)
t_json "VERSION with empty stdin" '.cniVersion' 1.1.0

# Environment (code 4 naming the variable)
OUT=$(env -u CNI_COMMAND "$T_BIN/loopback" <<<"$conf"); RC=$?
t_err "missing CNI_COMMAND" 4 'CNI_COMMAND'
cni_run loopback BOGUS "$ns" lo c1 <<<"$conf"; t_err "unknown CNI_COMMAND" 4 'CNI_COMMAND.*BOGUS'
cni_run loopback ADD "" lo c1 <<<"$conf"; t_err "ADD without CNI_NETNS" 4 'CNI_NETNS'
cni_run loopback ADD "$ns" "" c1 <<<"$conf"; t_err "ADD without CNI_IFNAME" 4 'CNI_IFNAME'
cni_run loopback ADD "$ns" lo "" <<<"$conf"; t_err "ADD without CNI_CONTAINERID" 4 'CNI_CONTAINERID'
cni_run loopback ADD "$ns" "eth0123456789012" c1 <<<"$conf"; t_err "ifname too long" 4 'CNI_IFNAME.*15'
cni_run loopback ADD "$ns" "a/b" c1 <<<"$conf"; t_err "ifname with /" 4 'CNI_IFNAME'
cni_run loopback ADD "$ns" "." c1 <<<"$conf"; t_err "ifname ." 4 'CNI_IFNAME'
cni_run loopback ADD "$ns" "a b" c1 <<<"$conf"; t_err "ifname with space" 4 'CNI_IFNAME'
cni_run loopback ADD "$ns" lo "../x" <<<"$conf"; t_err "container id with traversal" 4 'CNI_CONTAINERID'
cni_run loopback ADD "$ns" lo c1 "FOO" <<<"$conf"; t_err "malformed CNI_ARGS" 4 'CNI_ARGS'
cni_run loopback ADD /etc/passwd lo c1 <<<"$conf"; t_err "CNI_NETNS not a netns" 4 'not a network namespace'
cni_run loopback ADD /nonexistent/ns lo c1 <<<"$conf"; t_like "CNI_NETNS missing is an error" "$RC:$OUT" '^1:.*CNI_NETNS'
t_is "error output is in the request's version" "$(jq -r .cniVersion <<<"$OUT")" 1.0.0

# Config (codes 6, 7, 1)
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":'; t_err "truncated JSON" 6 'invalid JSON'
cni_run loopback ADD "$ns" lo c1 <<<'[1,2]'; t_err "config not an object" 6 'object'
cni_run loopback ADD "$ns" lo c1 </dev/null; t_err "empty stdin" 6 'empty'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"1.0.0","type":"loopback"}'; t_err "missing name" 7 'name'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"1.0.0","name":"../x","type":"loopback"}'; t_err "network name with traversal" 7 'name'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"1.0.0","name":7,"type":"loopback"}'; t_err "name of the wrong type" 7 'name: expected string'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"1.0.0","name":"n","ipMasq":"yes"}'; t_err "ipMasq not a boolean" 7 'ipMasq: expected boolean'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"9.9.9","name":"n","type":"loopback"}'; t_err "unsupported version" 1 '9.9.9'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"one","name":"n","type":"loopback"}'; t_err "malformed version" 1 'malformed'
cni_run loopback CHECK "$ns" lo c1 <<<'{"cniVersion":"0.3.1","name":"n","type":"loopback"}'; t_err "CHECK before 0.4.0 refused" 1 'CHECK'
cni_run loopback STATUS "" "" "" <<<'{"cniVersion":"1.0.0","name":"n","type":"loopback"}'; t_err "STATUS before 1.1.0 refused" 1 'STATUS'
cni_run loopback GC "" "" "" <<<'{"cniVersion":"1.0.0","name":"n","type":"loopback"}'; t_err "GC before 1.1.0 refused" 1 'GC'
cni_run loopback ADD "$ns" lo c1 <<<'{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"x"}]}}'; t_err "malformed prevResult" 6 'prevResult.ips\[0\].address'
cni_run loopback GC "" "" "" <<<'{"cniVersion":"1.1.0","name":"n","cni.dev/valid-attachments":[{"containerID":"a"}]}'; t_err "malformed valid-attachments" 7 'valid-attachments\[0\].ifname'

# Oversized and deeply nested input: clean errors, no crash.
big=$(head -c 5000000 /dev/zero | tr '\0' ' ')
cni_run loopback ADD "$ns" lo c1 <<<"$big"; t_err "5 MB config" 6 'larger'
deep=$(printf '%*s' 100000 '' | tr ' ' '['; printf '%*s' 100000 '' | tr ' ' ']')
cni_run loopback ADD "$ns" lo c1 <<<"$deep"; t_err "100000-deep config" 6 'deeper'

# A missing cniVersion means 0.1.0 (result in the legacy shape).
cni_run loopback ADD "$ns" lo c1 <<<'{"name":"n","type":"loopback"}'
t_is "no cniVersion: ADD works" "$RC" 0
t_json "no cniVersion: 0.1.0 result" '.cniVersion + " " + .ip4.ip' "0.1.0 127.0.0.1/8"

# Errors changed nothing on the host; the only change is lo in our netns.
t_is "host state unchanged by all the failures" "$(t_host_state)" "$before"

# STATUS and GC at 1.1.0 are accepted and succeed for loopback.
cni_run loopback STATUS "" "" "" <<<'{"cniVersion":"1.1.0","name":"n","type":"loopback"}'; t_is "STATUS 1.1.0" "$RC:$OUT" "0:"
CNI_PATH=$T_BIN cni_run loopback GC "" "" "" <<<'{"cniVersion":"1.1.0","name":"n","type":"loopback","cni.dev/valid-attachments":[]}'; t_is "GC 1.1.0" "$RC:$OUT" "0:"
# Least privilege: VERSION keeps no capability; a network applet keeps
# NET_ADMIN, NET_RAW, SYS_ADMIN, SYS_PTRACE and DAC_OVERRIDE only.
err=$(CNI_TEST_CAPS=1 CNI_COMMAND=VERSION "$T_BIN/loopback" 2>&1 >/dev/null </dev/null)
t_is "VERSION runs with no capabilities" "$err" "caps=0"
err=$(CNI_TEST_CAPS=1 CNI_COMMAND=ADD CNI_NETNS=$ns CNI_IFNAME=lo CNI_CONTAINERID=c1 "$T_BIN/loopback" 2>&1 >/dev/null <<<"$conf")
t_is "ADD keeps only the network set" "$err" "caps=283002"
t_done
