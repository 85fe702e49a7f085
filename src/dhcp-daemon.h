/* The DHCP lease daemon behind the dhcp IPAM applet (`cni dhcp daemon`).
 *
 * One thread, one poll() loop. Each lease is a state machine (RFC 2131
 * 4.4: SELECTING, REQUESTING, BOUND, RENEWING, REBINDING, INIT-REBOOT) with
 * its own timer and, only while it exchanges packets, its own AF_PACKET
 * socket. That socket is created inside the container's namespace through
 * netns_run() and keeps talking there, so the loop itself never leaves the
 * host namespace and a silent server only delays its own lease. Between
 * exchanges a lease holds no descriptor at all: a namespace that the
 * runtime deleted without DEL is then really freed, and the next renewal
 * notices it is gone (the path is missing, or names another namespace).
 *
 * Each bound lease is saved as <state dir>/<hash>.json (the last ACK as
 * hex, when it was received, the namespace identity); a restarted daemon
 * reads them back and resumes renewing, so it can be restarted without
 * touching running containers. SIGTERM does not release leases, for the
 * same reason.
 *
 * Protocol on the unix socket: one request per connection, one line of
 * JSON each way.
 *   -> {"op":"allocate","containerID":C,"network":N,"ifname":I,"netns":P,
 *       "request":[1,3,...],"provide":[{"code":12,"value":"pod"}],
 *       "priority":0}
 *   -> {"op":"check"|"release","containerID":C,"network":N,"ifname":I}
 *   -> {"op":"gc","network":N,"valid":[{"containerID":C,"ifname":I},...]}
 *   -> {"op":"status"}
 *   <- {"ok":true,"result":{CNI 1.1.0 result}}   (allocate, check)
 *   <- {"ok":true}                               (release, gc, status)
 *   <- {"ok":false,"code":N,"msg":M,"details":D} (any failure)
 * A lease is named by "containerID/network/ifname", which is also the
 * client identifier sent to the server (type 0), as the reference does.
 * The reply to allocate comes when the lease is bound or has failed; the
 * daemon bounds that wait with -resendtimeout. */
#ifndef CNI_DHCP_DAEMON_H
#define CNI_DHCP_DAEMON_H

#define DHCP_DEFAULT_SOCKET "/run/cni/dhcp.sock"
#define DHCP_DEFAULT_STATEDIR "/run/cni/dhcp"

/* Run the daemon; argv[0] is "daemon", then Go-style flags (-socketpath P,
 * -socketpath=P, --broadcast...). Runs in the foreground until SIGTERM or
 * SIGINT, logging to stderr. Returns the exit status. */
int dhcp_daemon_main(int argc, char **argv);

#endif
