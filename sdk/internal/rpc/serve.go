package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowrun/flowrun/sdk/plugin"
)

// DescribeArg is the single argument that makes a plugin binary print its
// Info as JSON instead of serving.
const DescribeArg = "describe"

// describeTimeout bounds the Info call a describe makes.
const describeTimeout = 10 * time.Second

// ServeConfig is the go-plugin configuration a plugin binary serves p (a
// kind's server plugin) with, as kind. Tests set its Test field to serve in
// process.
func ServeConfig(kind plugin.Kind, p goplugin.Plugin) *goplugin.ServeConfig {
	return &goplugin.ServeConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: plugin.VersionedPlugins(map[plugin.Kind]goplugin.Plugin{kind: p}),
		GRPCServer:       plugin.GRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "flowrun-plugin",
			Level:      hclog.Warn,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	}
}

// Serve is the body of every kind's Serve: answer "describe", or serve p
// over go-plugin until the host goes away. It does not return when it
// answers describe.
func Serve(kind plugin.Kind, impl plugin.Base, p goplugin.Plugin) {
	if impl == nil {
		fmt.Fprintf(os.Stderr, "flowrun: %s.Serve called with a nil implementation\n", kind)
		os.Exit(1)
	}
	if len(os.Args) == 2 && os.Args[1] == DescribeArg {
		if err := Describe(os.Stdout, kind, impl); err != nil {
			fmt.Fprintf(os.Stderr, "describe: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	go exitWithParent(os.Getppid(), parentPoll)
	goplugin.Serve(ServeConfig(kind, p))
}

// parentPoll is how often a serving plugin checks that its host still
// runs.
const parentPoll = 200 * time.Millisecond

// exitWithParent ends the plugin process once its parent, the host that
// launched it, is gone: the process is then re-parented (to init or a
// subreaper), so its parent id changes. The host also asks Linux to kill
// it when the host dies (Pdeathsig); this covers other systems and a
// host thread exiting early. A plugin whose parent is already init at
// start (started by hand) is not watched.
func exitWithParent(ppid int, every time.Duration) {
	if ppid <= 1 {
		return
	}
	for range time.Tick(every) {
		if os.Getppid() != ppid {
			fmt.Fprintf(os.Stderr, "flowrun plugin: the host (pid %d) is gone; exiting\n", ppid)
			os.Exit(3)
		}
	}
}

// Describe writes impl's Info, completed with kind and the API version, as
// indented JSON.
func Describe(w io.Writer, kind plugin.Kind, impl plugin.Base) error {
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	info, err := impl.Info(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(CompleteInfo(info, kind))
}
