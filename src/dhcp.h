/* DHCPv4 messages (RFC 2131, options RFC 2132): a pure codec, no sockets.
 *
 * The client in src/dhcp-daemon.c talks through an AF_PACKET socket because
 * the interface has no address yet, so this module also frames a message
 * into (and out of) an IPv4+UDP datagram. Everything here works on caller
 * buffers and never allocates, so the fuzzers and unit tests can loop.
 *
 * Addresses are uint32_t in network byte order, as they sit in the packet. */
#ifndef CNI_DHCP_H
#define CNI_DHCP_H

#include "err.h"
#include "result.h"

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68
/* Largest message we build or accept: an Ethernet frame's payload. */
#define DHCP_MAX_MSG 1500
/* BOOTP's fixed part and the magic cookie in front of the options. */
#define DHCP_FIXED_LEN 236
#define DHCP_OPTIONS_OFF 240
/* RFC 1542: relays may drop BOOTP messages shorter than this. */
#define DHCP_MIN_MSG 300
#define DHCP_UDP_HDR 28 /* IPv4 header (no options) + UDP header */

enum {
	DHCP_BOOTREQUEST = 1,
	DHCP_BOOTREPLY = 2,
	DHCP_FLAG_BROADCAST = 0x8000,
};

/* Message types (option 53). */
enum {
	DHCPDISCOVER = 1,
	DHCPOFFER,
	DHCPREQUEST,
	DHCPDECLINE,
	DHCPACK,
	DHCPNAK,
	DHCPRELEASE,
	DHCPINFORM,
};

/* Option codes this client reads or writes. */
enum {
	DHCP_OPT_PAD = 0,
	DHCP_OPT_SUBNET_MASK = 1,
	DHCP_OPT_ROUTER = 3,
	DHCP_OPT_DNS = 6,
	DHCP_OPT_HOST_NAME = 12,
	DHCP_OPT_DOMAIN_NAME = 15,
	DHCP_OPT_STATIC_ROUTES = 33,
	DHCP_OPT_REQUESTED_IP = 50,
	DHCP_OPT_LEASE_TIME = 51,
	DHCP_OPT_OVERLOAD = 52,
	DHCP_OPT_MSG_TYPE = 53,
	DHCP_OPT_SERVER_ID = 54,
	DHCP_OPT_PARAM_LIST = 55,
	DHCP_OPT_MESSAGE = 56,
	DHCP_OPT_T1 = 58,
	DHCP_OPT_T2 = 59,
	DHCP_OPT_CLIENT_ID = 61,
	DHCP_OPT_CLASSLESS_ROUTES = 121,
	DHCP_OPT_END = 255,
};

/* A decoded message. Options are stored by code with their value; an
 * option split over several instances or over the sname/file fields
 * (RFC 3396, option 52) is already joined. */
struct dhcp_msg {
	uint8_t op;
	uint8_t htype, hlen;
	uint32_t xid;
	uint16_t secs, flags;
	uint32_t ciaddr, yiaddr, siaddr, giaddr;
	uint8_t chaddr[16];
	uint8_t type; /* option 53, 0 when absent */

	uint16_t opt_off[256];
	uint16_t opt_len[256];
	uint8_t opt_has[256 / 8];
	uint8_t opt_data[DHCP_MAX_MSG];
	size_t opt_used;
};

/* Decode the BOOTP payload p[0..n). Returns 0, or -1 when it is not a
 * well-formed DHCP message (short, no magic cookie, an option running past
 * its field). Unknown options are kept, not interpreted. */
int dhcp_msg_parse(const uint8_t *p, size_t n, struct dhcp_msg *m);

/* The value of option code, its length in *len; NULL when absent. */
const uint8_t *dhcp_msg_opt(const struct dhcp_msg *m, uint8_t code, size_t *len);
/* Option as one address / a 32-bit number (exactly 4 bytes); 0 or -1. */
int dhcp_msg_opt_u32(const struct dhcp_msg *m, uint8_t code, uint32_t *out);

/* Building: the fixed part first, then options, then finish. */
struct dhcp_buf {
	uint8_t b[DHCP_MAX_MSG];
	size_t len;
};
struct dhcp_hdr {
	uint8_t type; /* message type, written as option 53 */
	uint32_t xid;
	uint16_t secs, flags;
	uint32_t ciaddr;
	const uint8_t *mac; /* 6 bytes */
};
void dhcp_buf_start(struct dhcp_buf *b, const struct dhcp_hdr *h);
/* Append an option; values longer than 255 bytes are split into several
 * instances (RFC 3396). -1 when the message would not fit. */
int dhcp_buf_opt(struct dhcp_buf *b, uint8_t code, const void *data, size_t len);
int dhcp_buf_opt_u32(struct dhcp_buf *b, uint8_t code, uint32_t v_be);
/* Append END and pad to the BOOTP minimum. -1 when full. */
int dhcp_buf_finish(struct dhcp_buf *b);

/* Frame payload into an IPv4/UDP datagram in out (cap bytes) from src:68 to
 * dst:67, checksums filled. Returns the datagram length or -1. */
size_t dhcp_udp_wrap(uint8_t *out, size_t cap, uint32_t src, uint32_t dst, const uint8_t *payload,
		     size_t len);
/* Unframe an IPv4 datagram: accepts only unfragmented UDP to port 68 with
 * a valid IP header checksum, and a valid UDP checksum unless check_udp is
 * false (the kernel has not computed it yet: TP_STATUS_CSUMNOTREADY) or it
 * is zero. Points *payload (of *len bytes) into pkt, sets *src. 0 or -1. */
int dhcp_udp_unwrap(const uint8_t *pkt, size_t n, bool check_udp, const uint8_t **payload,
		    size_t *len, uint32_t *src);

/* Option names accepted in the config's request/provide lists: the
 * dhcp-options(5) names we know, or a decimal code 1..254. -1 if neither. */
int dhcp_option_code(const char *name);

/* Lease times of an ACK in seconds: lease (option 51, default 3600), T1
 * (58, default lease/2) and T2 (59, default lease*7/8). Inconsistent T1/T2
 * fall back to the defaults. An infinite lease is UINT32_MAX for all. */
void dhcp_msg_times(const struct dhcp_msg *m, uint32_t *lease, uint32_t *t1, uint32_t *t2);

/* Classless static routes (option 121, RFC 3442): decode val into at most
 * max (dst, gw) pairs; returns the count, or -1 when the option is
 * malformed (the RFC says to ignore it then). */
struct dhcp_route {
	uint32_t dst;
	int prefix;
	uint32_t gw;
};
int dhcp_classless_routes(const uint8_t *val, size_t len, struct dhcp_route *out, size_t max);

/* The CNI view of an ACK into r (an IPAM result: no interfaces): address
 * yiaddr with the subnet mask, gateway the first router; routes from
 * option 121 when present (a 0.0.0.0 router means on-link: gw 0.0.0.0 and
 * scope link, as the reference reports it),
 * otherwise option 33 and a default route via the router; DNS servers and
 * domain. priority > 0 is set on every route. Fails (code 999) without a
 * subnet mask, as the reference does. */
int dhcp_msg_result(const struct dhcp_msg *m, unsigned priority, struct cni_result *r,
		    struct cni_err *err);

#endif
