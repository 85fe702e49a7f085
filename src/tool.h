/* What the runtime tools share (cni exec, cnitool, cni list, cni show and
 * the Kurma add and del): their command-line conventions, one run of the
 * runtime by verb, and how they print.
 *
 * These are the tools' own code, kept in the core so that each applet
 * stays one file: unlike the rest of the core, functions here print on
 * stdout and stderr for the tool that calls them. They never exit; a
 * tool's main returns what they return. */
#ifndef CNI_TOOL_H
#define CNI_TOOL_H

#include "runtime.h"

/* Returned by the parsers below when the tool goes on; anything else is
 * the exit status, usage already printed. */
#define TOOL_CONTINUE (-1)

/* Print j on stdout with a newline, indented or on one line. */
void tool_print_json(const struct cni_json *j, bool pretty);

/* A verb of the command line: add, del, check, status or gc, in lower
 * case or (any_case) in any case. CNI_CMD_NONE for anything else. */
enum cni_cmd tool_parse_verb(const char *s, bool any_case);

/* The command line of cni list and cni show:
 *   [ARG] [--DIR_OPT DIR] [--id ID] [--json] [--help]
 * --id only with_id. Exit status 0 after --help (usage on stdout), 2 for
 * an unknown option or a second argument (usage on stderr). */
struct cni_tool_opts {
	const char *arg; /* the optional argument, or NULL */
	const char *dir; /* --DIR_OPT, or NULL */
	const char *id;	 /* --id, or NULL */
	bool json;
};
int tool_parse_opts(int argc, char **argv, const char *usage, const char *dir_opt, bool with_id,
		    struct cni_tool_opts *o);

/* One run of the runtime from a tool: the tool fills the inputs (the
 * attachment is built from them), tool_run runs the verb, and
 * tool_run_clear frees what the run owns. */
struct cni_tool_run {
	struct cni_runtime rt;
	struct cni_netconf *nc;	    /* owned */
	char *container_id, *netns; /* owned, or NULL */
	const char *ifname, *args;  /* borrowed; args: CNI_ARGS or NULL */
	struct cni_json *cap_args;  /* owned, or NULL */
	const struct cni_gc_attachment *valid; /* GC: extra valid attachments */
	size_t n_valid;
	struct cni_result *res;	  /* out, ADD: owned */
	struct cni_gc_report rep; /* out, GC: also after a failure */
	struct cni_err err;
};
#define TOOL_RUN_INIT {.rt = {.failed = -1}}
void tool_run_clear(struct cni_tool_run *t);

/* Run cmd (ADD, DEL, CHECK, STATUS or GC) of t->nc through the runtime
 * (src/runtime.h); other commands do nothing. 0 or -1 with t->err set. */
int tool_run(struct cni_tool_run *t, enum cni_cmd cmd);

/* Parse capability arguments (text, a JSON object) into t->cap_args;
 * what names them in the error when it is not an object. -1 with t->err
 * set, t->cap_args NULL when the text is not JSON at all. */
int tool_parse_caps(struct cni_tool_run *t, const char *text, const char *what);

/* Print the ADD result in the list's cniVersion. -1 if it cannot be
 * encoded (t->err set). */
int tool_print_result(struct cni_tool_run *t, bool pretty);

/* The Kurma network API's add and del (kurma-network-spec.md):
 *   add|del NETNS UUID [IFNAME]     (network definition on stdin)
 * runs cmd (CNI_CMD_ADD or CNI_CMD_DEL) with UUID as container id.
 * After ADD, output (may be NULL) converts the result into what is
 * printed. A failure exits 1 with the CNI error on stdout and one line on
 * stderr, "add: " or "del: ", the failed plugin type, the message. */
int tool_kurma_main(int argc, char **argv, enum cni_cmd cmd, const char *usage,
		    struct cni_json *(*output)(const struct cni_result *res, struct cni_err *err));

#endif
