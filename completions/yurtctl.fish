# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_yurtctl_global_optspecs
    string join \n v/verbose q/quiet o/output= dry-run= kubeconfig= context= n/namespace= y/yes qps= burst= progress= no-color h/help V/version
end

function __fish_yurtctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_yurtctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_yurtctl_using_subcommand
    set -l cmd (__fish_yurtctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c yurtctl -n "__fish_yurtctl_needs_command" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -s V -l version -d 'Print version'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "convert" -d 'Convert this Kubernetes cluster into an OpenYurt cluster'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "revert" -d 'Turn an OpenYurt cluster made by convert back into the original cluster'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "upgrade" -d 'Move a cluster yurtctl converted to a newer OpenYurt, in place'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "status" -d 'Show what convert did and where each node stands (read-only)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "diagnose" -d 'Find what is wrong in a converted cluster, and what to do about it (read-only)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "staticpod" -d 'Roll out, inspect and roll back static pods across nodes, from the client side'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "images" -d 'List the images a conversion pulls, to mirror them for air-gapped clusters'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "completion" -d 'Print a shell completion script'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "man" -d 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "playground" -d 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)'
complete -c yurtctl -n "__fish_yurtctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l cloud-nodes -d 'Nodes that become cloud nodes (comma-separated; control-plane nodes are cloud nodes unless named in --edge-nodes)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l edge-nodes -d 'Only these nodes become edge nodes (comma-separated); other workers are left alone' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l profile -d 'Component set to install' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l servant-image -d 'Image of the node Jobs (yurtctl\'s own image) [default: the profile\'s]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l openyurt-version -d 'Another patch release of the profile\'s OpenYurt version (sets the OpenYurt image tags)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l image-repository -d 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm\'s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l image -d 'Use IMAGE for COMPONENT (repeatable; components are the profile\'s image keys)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l image-pull-secret -d 'A kube-system Secret of type kubernetes.io/dockerconfigjson the node Jobs and the components pull their images with (repeatable; a static-pod YurtHub cannot use one)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l concurrency -d 'Node Jobs running at once' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l job-timeout -d 'Time allowed for each node\'s Job' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l skip-phases -d 'Phases to skip (comma-separated ids, in run order: lock, preflight, preflight/nodes, label-nodes, components, kcm, nodes/edge, nodes/cloud, verify)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l autonomous-nodes -d 'Edge nodes that get the autonomy annotation (comma-separated) [default: every edge node]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l provider -d 'The kind of cluster; convert refuses when the nodes say otherwise' -r -f -a "auto\t'Whatever the nodes say (kind\'s provider ID, minikube\'s labels, kubeadm\'s annotation)'
kubeadm\t''
kind\t''
minikube\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l disable-nodelifecycle -d 'Disable kube-controller-manager\'s nodelifecycle controller on control-plane nodes' -r -f -a "auto\t'What the profile needs'
true\t''
false\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l ignore-preflight-errors -d 'Preflight checks whose errors become warnings (comma-separated, any case: KubernetesVersion, Provider, or all)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l nodepool -d 'The NodePool every edge node joins (profiles with NodePools) [default: the profile\'s, edge]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l nodepools-from-label -d 'One edge NodePool per value of this node label, e.g. topology.kubernetes.io/zone (profiles with NodePools)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l cloud-nodepool -d 'The NodePool cloud nodes join (profiles with NodePools) [default: the profile\'s, cloud]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l token-ttl -d 'Lifetime of the bootstrap token convert creates for YurtHub' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l all-edge -d 'Every node that is not a cloud node becomes an edge node (the default)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l pull-images -d 'In the node-side preflight, each node first pulls every image the conversion runs (`yurtctl images pull`\'s list) with its container runtime; a node that cannot pull one refuses the conversion before anything changes (kubeadm\'s preflight pulls too)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l force-unlock -d 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l skip-workload-restart -d 'Do not restart the nodes\' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l require-all-ready -d 'Refuse to start while any selected node is NotReady (by default such a node is only skipped and reported)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l deploy-yurttunnel -d 'Deploy yurt-tunnel-server and yurt-tunnel-agent (profiles that have them)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l enable-app-manager -d 'Deploy yurt-app-manager (profiles that have it)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l force-conflicts -d 'Take over fields of our objects that other field managers own (server-side apply)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand convert" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l nodes -d 'Only these nodes (comma-separated); the components, the journal and the lock stay until a revert of all nodes' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l concurrency -d 'Node Jobs running at once' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l job-timeout -d 'Time allowed for each node\'s Job' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l skip-phases -d 'Phases to skip (comma-separated ids, in run order: lock, preflight, cleanup-jobs, nodes/cloud, nodes/edge, kcm, components, label-nodes, verify)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l force-unlock -d 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l skip-workload-restart -d 'Do not restart the nodes\' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand revert" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l profile -d 'The profile to upgrade to (one whose profile.yaml names the cluster\'s in upgradeFrom)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l servant-image -d 'Image of the node Jobs (yurtctl\'s own image) [default: the profile\'s]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l openyurt-version -d 'Another patch release of the profile\'s OpenYurt version (sets the OpenYurt image tags)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l image-repository -d 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm\'s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l image -d 'Use IMAGE for COMPONENT (repeatable; components are the profile\'s image keys)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l image-pull-secret -d 'A Secret in kube-system the node Jobs and the components pull their images with (repeatable) [default: the ones convert was given]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l max-unavailable -d 'Nodes moving at once: an integer or a percentage of the targeted nodes, rounded up. A node holds its place from its Job\'s start until it is Ready again' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l partition -d 'Nodes kept on the old release (the last ones in upgrade order): an integer or a percentage of the targeted nodes, rounded down; a later run with a smaller one moves them' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l priority -d 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name; edge nodes move before cloud nodes)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l canary -d 'Move only the first N nodes in this run, then stop (re-run to continue)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l max-failures -d 'Nodes that may fail (or stay NotReady) before the upgrade halts (0: at the first)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l job-timeout -d 'Time allowed for each node\'s Job, and then for the node to be Ready again' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l skip-phases -d 'Phases to skip (comma-separated ids, in run order: lock, preflight, kcm, components, label-nodes, nodes/edge, nodes/cloud, cleanup, migrate, verify)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l ignore-preflight-errors -d 'Preflight checks whose errors become warnings (comma-separated, any case: KubernetesVersion, or all)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s l -l selector -d 'Move only the nodes whose labels match (kubectl syntax), e.g. a canary; the components change for every node, the old release\'s objects stay until a run without -l has moved the rest' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l pause -d 'Change the components and labels but move no node (re-run without --pause to resume)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l force-unlock -d 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l force-conflicts -d 'Take over fields of our objects that other field managers own (server-side apply)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l rollback -d 'Return the cluster to the release and options the last upgrade came from, from any mix of moved and unmoved nodes (the rollout flags apply; the target is the journal\'s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand upgrade" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l servant-image -d 'Image of the read-only node Jobs [default: the one convert used, else yurtctl\'s own]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l job-timeout -d 'Time allowed for each node\'s read-only Job' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l collect -d 'Also write what a bug report needs into one .tar.gz in DIR, secrets and tokens redacted: the findings, versions, kube-system\'s events, the logs of yurtctl\'s node Job pods and of yurt-manager, the journal' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand diagnose" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "upgrade" -d 'Roll a new revision of a static pod out to the nodes that run it'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "status" -d 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "rollback" -d 'Roll a previous revision out again, with the same controls as upgrade'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "ota" -d 'OTA: upgrade chosen nodes now, from the client side'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "adopt" -d 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and not __fish_seen_subcommand_from upgrade status rollback ota adopt help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l image -d 'New image, `IMAGE` for a single-container pod or `CONTAINER=IMAGE` (repeatable)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s f -l filename -d 'The new pod (one v1 Pod document)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l manifest -d 'The manifest file\'s base name on nodes and the ConfigMap key [default: the stored one, else NAME]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l strategy -d 'How nodes get the new revision' -r -f -a "advanced-rolling-update\t'Upgrade nodes from the client, a sliding window of --max-unavailable at a time'
ota\t'Mark mirror pods PodNeedUpgrade; each node upgrades when its owner chooses'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s l -l selector -d 'Only nodes whose labels match this selector (kubectl syntax)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l max-unavailable -d 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l min-ready-seconds -d 'A node counts as upgraded once its new pod has been Ready this long' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l node-timeout -d 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l max-failures -d 'Failed nodes tolerated before the rollout stops (0: stop at the first)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l partition -d 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l priority -d 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l canary -d 'Upgrade only N nodes in this run, then stop (re-run to continue)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l servant-image -d 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l image-pull-secret -d 'A Secret of type kubernetes.io/dockerconfigjson in the static pod\'s namespace the node Jobs pull the servant image with (repeatable)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l pause -d 'Store the new revision but start no node (re-run without --pause to resume)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l force-unlock -d 'Delete this static pod\'s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from upgrade" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s w -l watch -d 'Print again whenever the status changes (a mirror pod or the stored revision; with -o json|yaml one document per change); runs until Ctrl-C'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l to-revision -d 'The revision number to go back to (see `status -o yaml`) [default: the previous one]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l strategy -d 'How nodes get the old revision' -r -f -a "advanced-rolling-update\t'Upgrade nodes from the client, a sliding window of --max-unavailable at a time'
ota\t'Mark mirror pods PodNeedUpgrade; each node upgrades when its owner chooses'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s l -l selector -d 'Only nodes whose labels match this selector (kubectl syntax)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l max-unavailable -d 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l min-ready-seconds -d 'A node counts as upgraded once its new pod has been Ready this long' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l node-timeout -d 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l max-failures -d 'Failed nodes tolerated before the rollout stops (0: stop at the first)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l partition -d 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l priority -d 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l canary -d 'Upgrade only N nodes in this run, then stop (re-run to continue)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l servant-image -d 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l image-pull-secret -d 'A Secret of type kubernetes.io/dockerconfigjson in the static pod\'s namespace the node Jobs pull the servant image with (repeatable)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l pause -d 'Store the new revision but start no node (re-run without --pause to resume)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l force-unlock -d 'Delete this static pod\'s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from rollback" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -f -a "apply" -d 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from ota" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l manifest -d 'The manifest file\'s base name on nodes (spec.staticPodManifest) [default: the stored one, else NAME]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l strategy -d 'The set\'s upgradeStrategy: how yurt-manager rolls out later template changes' -r -f -a "advanced-rolling-update\t'yurt-manager upgrades the nodes itself, --max-unavailable at a time'
ota\t'yurt-manager only marks pods PodNeedUpgrade; nodes upgrade through YurtHub\'s OTA endpoint'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l max-unavailable -d 'The set\'s maxUnavailable (advanced-rolling-update)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from adopt" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "upgrade" -d 'Roll a new revision of a static pod out to the nodes that run it'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "rollback" -d 'Roll a previous revision out again, with the same controls as upgrade'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "ota" -d 'OTA: upgrade chosen nodes now, from the client side'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "adopt" -d 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand staticpod; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -f -a "list" -d 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -f -a "pull" -d 'Pull those images on the nodes, without running them, to check each node can'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and not __fish_seen_subcommand_from list pull help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l profile -d 'Component set whose images to list' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l servant-image -d 'Image of the node Jobs (yurtctl\'s own image) [default: the profile\'s]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l openyurt-version -d 'Another patch release of the profile\'s OpenYurt version (sets the OpenYurt image tags)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l image-repository -d 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm\'s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l image -d 'Use IMAGE for COMPONENT (repeatable; components are the profile\'s image keys)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l profile -d 'Component set whose images to pull' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l servant-image -d 'Image of the node Jobs (yurtctl\'s own image) [default: the profile\'s]' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l openyurt-version -d 'Another patch release of the profile\'s OpenYurt version (sets the OpenYurt image tags)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l image-repository -d 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm\'s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l image -d 'Use IMAGE for COMPONENT (repeatable; components are the profile\'s image keys)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l image-pull-secret -d 'A Secret in kube-system the node Jobs pull with (repeatable); the nodes\' runtime pulls the other images with its own credentials, as the kubelet\'s pulls for pods without pull Secrets do' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l job-timeout -d 'How long each node\'s Job may take, its pulls included' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from pull" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from help" -f -a "list" -d 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from help" -f -a "pull" -d 'Pull those images on the nodes, without running them, to check each node can'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand images; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand completion" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l dir -d 'Write every page (yurtctl.1, yurtctl-convert.1, …) into this directory instead of printing yurtctl(1) on stdout' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand man" -s h -l help -d 'Print help'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l nodes -d 'Nodes of the simulated cluster (one of them the control plane)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l layout -d 'What the nodes\' disks look like (kubelet unit files, kubeadm-flags.env, …): kubeadm (deb packages), kubeadm-usr (pkgs.k8s.io / rpm), kind or minikube' -r -f -a "kubeadm\t''
kubeadm-usr\t''
kind\t''
minikube\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l profile -d 'Component set convert installs' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l apiserver -d 'The API server: yurtsim\'s own (sim), or a real Kubernetes v1.37.2 control plane with OpenYurt v1.7.0\'s real yurt-manager and YurtHub (real: a checkout of yurtctl where tests/real/build.sh has built them; profile openyurt-v1.7)' -r -f -a "sim\t''
real\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l state-dir -d 'Where the cluster keeps its state (kubeconfig, node file systems) [default: a new temporary directory, removed at the end]' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s o -l output -d 'Output format of the result on stdout' -r -f -a "json\t''
yaml\t''
wide\t''
name\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l dry-run -d 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)' -r -f -a "none\t'Change things'
client\t'Compute and print the plan locally'
server\t'Ask the server to validate (for node-servant the same as client)'"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l kubeconfig -d 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)' -r -F
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l context -d 'The kubeconfig context to use' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s n -l namespace -d 'Namespace of namespaced objects a command names (static pods)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l qps -d 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server\'s API Priority and Fairness)' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l burst -d 'API requests allowed in a burst above a --qps limit' -r
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l progress -d 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none' -r -f -a "auto\t''
bars\t''
plain\t''
none\t''"
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l keep -d 'Keep the cluster running after the last step until Ctrl-C [default: when stdin is a terminal]'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l no-keep -d 'Shut the cluster down after the last step'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s v -l verbose -d 'More log detail on stderr (-v debug, -vv trace)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s q -l quiet -d 'Only warnings and errors on stderr'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s y -l yes -d 'Do not ask for confirmation (required when stdin is not a terminal)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -l no-color -d 'No colours (also when the NO_COLOR environment variable is set)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand playground" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "convert" -d 'Convert this Kubernetes cluster into an OpenYurt cluster'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "revert" -d 'Turn an OpenYurt cluster made by convert back into the original cluster'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "upgrade" -d 'Move a cluster yurtctl converted to a newer OpenYurt, in place'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "status" -d 'Show what convert did and where each node stands (read-only)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "diagnose" -d 'Find what is wrong in a converted cluster, and what to do about it (read-only)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "staticpod" -d 'Roll out, inspect and roll back static pods across nodes, from the client side'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "images" -d 'List the images a conversion pulls, to mirror them for air-gapped clusters'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "completion" -d 'Print a shell completion script'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "man" -d 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "playground" -d 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and not __fish_seen_subcommand_from convert revert upgrade status diagnose staticpod images completion man playground help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from staticpod" -f -a "upgrade" -d 'Roll a new revision of a static pod out to the nodes that run it'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from staticpod" -f -a "status" -d 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from staticpod" -f -a "rollback" -d 'Roll a previous revision out again, with the same controls as upgrade'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from staticpod" -f -a "ota" -d 'OTA: upgrade chosen nodes now, from the client side'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from staticpod" -f -a "adopt" -d 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from images" -f -a "list" -d 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)'
complete -c yurtctl -n "__fish_yurtctl_using_subcommand help; and __fish_seen_subcommand_from images" -f -a "pull" -d 'Pull those images on the nodes, without running them, to check each node can'
