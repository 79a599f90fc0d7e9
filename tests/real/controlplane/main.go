// Command realcp is the real Kubernetes control plane of yurtsim's real tier: one multi-call
// binary holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the nodes'
// kube-proxy, built from
// upstream's own modules. Each component runs in its own process (the first argument picks it):
// the command entry points cannot share a process, because
// k8s.io/apiserver/pkg/server/signal.go SetupSignalContext panics when called twice.
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

const usage = "usage: realcp etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy|version [FLAGS...]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	component, args := os.Args[1], os.Args[2:]
	switch component {
	case "etcd":
		// etcdmain reads its flags from the whole argv, program name first.
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		cmd := apiserver.NewAPIServerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-controller-manager":
		cmd := controllermanager.NewControllerManagerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-scheduler":
		cmd := scheduler.NewSchedulerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-proxy":
		cmd := proxy.NewProxyCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "version":
		fmt.Println(version.Get().GitVersion)
	default:
		fmt.Fprintf(os.Stderr, "realcp: unknown component %q\n%s\n", component, usage)
		os.Exit(2)
	}
}
