// libcni-driver: drives CNI plugins through the reference Go library
// (github.com/containernetworking/cni/libcni), the same code path podman and
// containerd use, so the integration tests can check that our multicall
// binary interoperates with it.
//
// Usage:
//
//	libcni-driver add|check|del|gc|status CONFFILE NETNS CONTAINERID IFNAME
//	libcni-driver validate CONFFILE
//	libcni-driver version PLUGINTYPE
//
// CONFFILE is a .conflist or a single-plugin .conf (told apart by the
// presence of a "plugins" key, not by the file name). NETNS is passed to the
// plugins unchanged; "-" stands for the empty string (allowed for DEL).
//
// Environment:
//
//	CNI_PATH       plugin search path (colon-separated), required
//	CNI_CACHE_DIR  libcni cache directory (default: libcni's /var/lib/cni)
//	CNI_ARGS       "K=V;K=V", passed as RuntimeConf.Args
//	CAP_ARGS       JSON object, passed as RuntimeConf.CapabilityArgs
//	VALID_ATTACHMENTS  gc only: extra "CONTAINERID/IFNAME;..." pairs that
//	               are still in use (CONTAINERID IFNAME on the command line
//	               count as one, unless CONTAINERID is "-")
//
// Output: add prints the result returned by libcni (already converted to the
// list's cniVersion), re-marshalled as JSON, on stdout. validate prints the
// capabilities the plugins declare, version the plugin's version info.
//
// Exit status: 0 success; 1 the operation failed (libcni's error text on
// stderr); 2 usage or input error; 3 the operation is not provided by the
// libcni version this driver was built against (GC and STATUS appeared in
// libcni 1.2; they are looked up at run time so the driver builds with
// either).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

const (
	exitFailed      = 1
	exitUsage       = 2
	exitUnsupported = 3
)

func usage() {
	fmt.Fprintf(os.Stderr, "usage: %s add|check|del|gc|status CONFFILE NETNS CONTAINERID IFNAME\n"+
		"       %s validate CONFFILE\n"+
		"       %s version PLUGINTYPE\n",
		filepath.Base(os.Args[0]), filepath.Base(os.Args[0]), filepath.Base(os.Args[0]))
	os.Exit(exitUsage)
}

func die(code int, format string, a ...interface{}) {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintln(os.Stderr, strings.TrimRight(msg, "\n"))
	os.Exit(code)
}

// fail reports an error returned by libcni (usually the plugin's own error,
// as *types.Error) and exits 1. The first stderr line is the error text.
func fail(err error) {
	fmt.Fprintln(os.Stderr, err.Error())
	var cniErr *types.Error
	if errors.As(err, &cniErr) {
		fmt.Fprintf(os.Stderr, "CNI error code %d\n", cniErr.Code)
	}
	os.Exit(exitFailed)
}

// loadList reads a .conflist, or a single .conf wrapped into a list.
func loadList(path string) (*libcni.NetworkConfigList, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if _, ok := probe["plugins"]; ok {
		return libcni.ConfListFromBytes(data)
	}
	conf, err := libcni.ConfFromBytes(data)
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromConf(conf)
}

// parseCNIArgs splits "K=V;K=V" into pairs; empty entries are skipped.
func parseCNIArgs(s string) ([][2]string, error) {
	var out [][2]string
	for _, kv := range strings.Split(s, ";") {
		if kv == "" {
			continue
		}
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return nil, fmt.Errorf("CNI_ARGS: %q is not K=V", kv)
		}
		out = append(out, [2]string{kv[:i], kv[i+1:]})
	}
	return out, nil
}

func pluginPath() []string {
	p := os.Getenv("CNI_PATH")
	if p == "" {
		die(exitUsage, "CNI_PATH is not set")
	}
	var dirs []string
	for _, d := range filepath.SplitList(p) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func newConfig() *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir(pluginPath(), os.Getenv("CNI_CACHE_DIR"), nil)
}

func runtimeConf(netns, containerID, ifname string) *libcni.RuntimeConf {
	if netns == "-" {
		netns = ""
	}
	rt := &libcni.RuntimeConf{
		ContainerID: containerID,
		NetNS:       netns,
		IfName:      ifname,
	}
	if s := os.Getenv("CNI_ARGS"); s != "" {
		args, err := parseCNIArgs(s)
		if err != nil {
			die(exitUsage, "%v", err)
		}
		rt.Args = args
	}
	if s := os.Getenv("CAP_ARGS"); s != "" {
		caps := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &caps); err != nil {
			die(exitUsage, "CAP_ARGS: %v", err)
		}
		rt.CapabilityArgs = caps
	}
	return rt
}

func printJSON(v interface{}) {
	data, err := json.Marshal(v)
	if err != nil {
		die(exitFailed, "marshalling output: %v", err)
	}
	os.Stdout.Write(append(data, '\n'))
}

// callOptional calls a CNIConfig method that may not exist in the libcni
// version we were built against. args are built by build(), given the
// method's type, so that types new in later versions need not be named.
func callOptional(cfg *libcni.CNIConfig, name string, build func(reflect.Type) []reflect.Value) error {
	m := reflect.ValueOf(cfg).MethodByName(name)
	if !m.IsValid() {
		die(exitUnsupported, "libcni has no %s (built against a version without it)", name)
	}
	out := m.Call(build(m.Type()))
	if len(out) == 0 {
		return nil
	}
	if e, ok := out[len(out)-1].Interface().(error); ok && e != nil {
		return e
	}
	return nil
}

// gcArgs builds a *libcni.GCArgs{ValidAttachments: []types.GCAttachment{...}}
// by reflection from the method's third parameter type.
func gcArgs(t reflect.Type, valid [][2]string) reflect.Value {
	if t.Kind() != reflect.Ptr || t.Elem().Kind() != reflect.Struct {
		die(exitUnsupported, "GCNetworkList: unexpected argument type %v", t)
	}
	args := reflect.New(t.Elem())
	f := args.Elem().FieldByName("ValidAttachments")
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Struct {
		die(exitUnsupported, "GCNetworkList: %v has no usable ValidAttachments", t.Elem())
	}
	for _, a := range valid {
		e := reflect.New(f.Type().Elem()).Elem()
		cid, ifn := e.FieldByName("ContainerID"), e.FieldByName("IfName")
		if !cid.IsValid() || !ifn.IsValid() {
			die(exitUnsupported, "GCNetworkList: unexpected attachment type %v", e.Type())
		}
		cid.SetString(a[0])
		ifn.SetString(a[1])
		f.Set(reflect.Append(f, e))
	}
	return args
}

func validAttachments(containerID, ifname string) [][2]string {
	var valid [][2]string
	if containerID != "-" && containerID != "" {
		valid = append(valid, [2]string{containerID, ifname})
	}
	for _, s := range strings.Split(os.Getenv("VALID_ATTACHMENTS"), ";") {
		if s == "" {
			continue
		}
		i := strings.LastIndexByte(s, '/')
		if i <= 0 || i == len(s)-1 {
			die(exitUsage, "VALID_ATTACHMENTS: %q is not CONTAINERID/IFNAME", s)
		}
		valid = append(valid, [2]string{s[:i], s[i+1:]})
	}
	return valid
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	cmd := os.Args[1]

	switch cmd {
	case "version":
		if len(os.Args) != 3 {
			usage()
		}
		info, err := newConfig().GetVersionInfo(ctx, os.Args[2])
		if err != nil {
			fail(err)
		}
		printJSON(map[string]interface{}{"supportedVersions": info.SupportedVersions()})
		return
	case "validate":
		if len(os.Args) != 3 {
			usage()
		}
		list, err := loadList(os.Args[2])
		if err != nil {
			die(exitUsage, "%v", err)
		}
		caps, err := newConfig().ValidateNetworkList(ctx, list)
		if err != nil {
			fail(err)
		}
		if caps == nil {
			caps = []string{}
		}
		printJSON(map[string]interface{}{"capabilities": caps})
		return
	case "add", "check", "del", "gc", "status":
	default:
		usage()
	}

	if len(os.Args) != 6 {
		usage()
	}
	list, err := loadList(os.Args[2])
	if err != nil {
		die(exitUsage, "%v", err)
	}
	cfg := newConfig()
	rt := runtimeConf(os.Args[3], os.Args[4], os.Args[5])

	switch cmd {
	case "add":
		res, err := cfg.AddNetworkList(ctx, list, rt)
		if err != nil {
			fail(err)
		}
		if res == nil {
			die(exitFailed, "libcni returned no result")
		}
		printJSON(res)
	case "check":
		err = cfg.CheckNetworkList(ctx, list, rt)
	case "del":
		err = cfg.DelNetworkList(ctx, list, rt)
	case "gc":
		valid := validAttachments(os.Args[4], os.Args[5])
		err = callOptional(cfg, "GCNetworkList", func(t reflect.Type) []reflect.Value {
			if t.NumIn() != 3 {
				die(exitUnsupported, "GCNetworkList: unexpected signature %v", t)
			}
			return []reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(list), gcArgs(t.In(2), valid)}
		})
	case "status":
		err = callOptional(cfg, "GetStatusNetworkList", func(t reflect.Type) []reflect.Value {
			if t.NumIn() != 2 {
				die(exitUnsupported, "GetStatusNetworkList: unexpected signature %v", t)
			}
			return []reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(list)}
		})
	}
	if err != nil {
		fail(err)
	}
}
