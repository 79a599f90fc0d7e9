// Command realyurt runs OpenYurt v1.7.0's own commands, built from its module: yurt-manager,
// yurthub and node-servant in one binary, the command picked by the name it is called as
// (a symlink) or by its first argument. The bodies repeat upstream's cmd/*/ main functions
// at v1.7.0 (github.com/openyurtio/openyurt cmd/yurt-manager/yurt-manager.go,
// cmd/yurthub/yurthub.go, cmd/yurt-node-servant/node-servant.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"

	manager "github.com/openyurtio/openyurt/cmd/yurt-manager/app"
	servantconfig "github.com/openyurtio/openyurt/cmd/yurt-node-servant/config"
	servantconvert "github.com/openyurtio/openyurt/cmd/yurt-node-servant/convert"
	servantrevert "github.com/openyurtio/openyurt/cmd/yurt-node-servant/revert"
	servantupgrade "github.com/openyurtio/openyurt/cmd/yurt-node-servant/static-pod-upgrade"
	hub "github.com/openyurtio/openyurt/cmd/yurthub/app"
	"github.com/openyurtio/openyurt/pkg/projectinfo"
)

const usage = "usage: realyurt yurt-manager|yurthub|node-servant [FLAGS...] (or call it by one of those names)"

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if name != "yurt-manager" && name != "yurthub" && name != "node-servant" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	switch name {
	case "yurt-manager":
		cmd := manager.NewYurtManagerCommand()
		cmd.SetArgs(args)
		logs.InitLogs()
		defer logs.FlushLogs()
		defer klog.Flush()
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
	case "yurthub":
		cmd := hub.NewCmdStartYurtHub(server.SetupSignalContext())
		cmd.Flags().AddGoFlagSet(flag.CommandLine)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
	case "node-servant":
		root := &cobra.Command{
			Use:     "node-servant",
			Short:   "node-servant do convert/revert specific node",
			Version: fmt.Sprintf("%#v", projectinfo.Get()),
		}
		root.PersistentFlags().String("kubeconfig", "", "The path to the kubeconfig file")
		root.AddCommand(servantconvert.NewConvertCmd())
		root.AddCommand(servantrevert.NewRevertCmd())
		root.AddCommand(servantconfig.NewConfigCmd())
		root.AddCommand(servantupgrade.NewUpgradeCmd())
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "realyurt: unknown command %q\n%s\n", name, usage)
		os.Exit(2)
	}
}
