
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'yurtctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'yurtctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'yurtctl' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('convert', 'convert', [CompletionResultType]::ParameterValue, 'Convert this Kubernetes cluster into an OpenYurt cluster')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Turn an OpenYurt cluster made by convert back into the original cluster')
            [CompletionResult]::new('upgrade', 'upgrade', [CompletionResultType]::ParameterValue, 'Move a cluster yurtctl converted to a newer OpenYurt, in place')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what convert did and where each node stands (read-only)')
            [CompletionResult]::new('diagnose', 'diagnose', [CompletionResultType]::ParameterValue, 'Find what is wrong in a converted cluster, and what to do about it (read-only)')
            [CompletionResult]::new('staticpod', 'staticpod', [CompletionResultType]::ParameterValue, 'Roll out, inspect and roll back static pods across nodes, from the client side')
            [CompletionResult]::new('images', 'images', [CompletionResultType]::ParameterValue, 'List the images a conversion pulls, to mirror them for air-gapped clusters')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout')
            [CompletionResult]::new('playground', 'playground', [CompletionResultType]::ParameterValue, 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;convert' {
            [CompletionResult]::new('--cloud-nodes', '--cloud-nodes', [CompletionResultType]::ParameterName, 'Nodes that become cloud nodes (comma-separated; control-plane nodes are cloud nodes unless named in --edge-nodes)')
            [CompletionResult]::new('--edge-nodes', '--edge-nodes', [CompletionResultType]::ParameterName, 'Only these nodes become edge nodes (comma-separated); other workers are left alone')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Component set to install')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]')
            [CompletionResult]::new('--openyurt-version', '--openyurt-version', [CompletionResultType]::ParameterName, 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)')
            [CompletionResult]::new('--image-repository', '--image-repository', [CompletionResultType]::ParameterName, 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A kube-system Secret of type kubernetes.io/dockerconfigjson the node Jobs and the components pull their images with (repeatable; a static-pod YurtHub cannot use one)')
            [CompletionResult]::new('--concurrency', '--concurrency', [CompletionResultType]::ParameterName, 'Node Jobs running at once')
            [CompletionResult]::new('--job-timeout', '--job-timeout', [CompletionResultType]::ParameterName, 'Time allowed for each node''s Job')
            [CompletionResult]::new('--skip-phases', '--skip-phases', [CompletionResultType]::ParameterName, 'Phases to skip (comma-separated ids, in run order: lock, preflight, preflight/nodes, label-nodes, components, kcm, nodes/edge, nodes/cloud, verify)')
            [CompletionResult]::new('--autonomous-nodes', '--autonomous-nodes', [CompletionResultType]::ParameterName, 'Edge nodes that get the autonomy annotation (comma-separated) [default: every edge node]')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'The kind of cluster; convert refuses when the nodes say otherwise')
            [CompletionResult]::new('--disable-nodelifecycle', '--disable-nodelifecycle', [CompletionResultType]::ParameterName, 'Disable kube-controller-manager''s nodelifecycle controller on control-plane nodes')
            [CompletionResult]::new('--ignore-preflight-errors', '--ignore-preflight-errors', [CompletionResultType]::ParameterName, 'Preflight checks whose errors become warnings (comma-separated, any case: KubernetesVersion, Provider, or all)')
            [CompletionResult]::new('--nodepool', '--nodepool', [CompletionResultType]::ParameterName, 'The NodePool every edge node joins (profiles with NodePools) [default: the profile''s, edge]')
            [CompletionResult]::new('--nodepools-from-label', '--nodepools-from-label', [CompletionResultType]::ParameterName, 'One edge NodePool per value of this node label, e.g. topology.kubernetes.io/zone (profiles with NodePools)')
            [CompletionResult]::new('--cloud-nodepool', '--cloud-nodepool', [CompletionResultType]::ParameterName, 'The NodePool cloud nodes join (profiles with NodePools) [default: the profile''s, cloud]')
            [CompletionResult]::new('--token-ttl', '--token-ttl', [CompletionResultType]::ParameterName, 'Lifetime of the bootstrap token convert creates for YurtHub')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--all-edge', '--all-edge', [CompletionResultType]::ParameterName, 'Every node that is not a cloud node becomes an edge node (the default)')
            [CompletionResult]::new('--pull-images', '--pull-images', [CompletionResultType]::ParameterName, 'In the node-side preflight, each node first pulls every image the conversion runs (`yurtctl images pull`''s list) with its container runtime; a node that cannot pull one refuses the conversion before anything changes (kubeadm''s preflight pulls too)')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('--skip-workload-restart', '--skip-workload-restart', [CompletionResultType]::ParameterName, 'Do not restart the nodes'' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)')
            [CompletionResult]::new('--require-all-ready', '--require-all-ready', [CompletionResultType]::ParameterName, 'Refuse to start while any selected node is NotReady (by default such a node is only skipped and reported)')
            [CompletionResult]::new('--deploy-yurttunnel', '--deploy-yurttunnel', [CompletionResultType]::ParameterName, 'Deploy yurt-tunnel-server and yurt-tunnel-agent (profiles that have them)')
            [CompletionResult]::new('--enable-app-manager', '--enable-app-manager', [CompletionResultType]::ParameterName, 'Deploy yurt-app-manager (profiles that have it)')
            [CompletionResult]::new('--force-conflicts', '--force-conflicts', [CompletionResultType]::ParameterName, 'Take over fields of our objects that other field managers own (server-side apply)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;revert' {
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Only these nodes (comma-separated); the components, the journal and the lock stay until a revert of all nodes')
            [CompletionResult]::new('--concurrency', '--concurrency', [CompletionResultType]::ParameterName, 'Node Jobs running at once')
            [CompletionResult]::new('--job-timeout', '--job-timeout', [CompletionResultType]::ParameterName, 'Time allowed for each node''s Job')
            [CompletionResult]::new('--skip-phases', '--skip-phases', [CompletionResultType]::ParameterName, 'Phases to skip (comma-separated ids, in run order: lock, preflight, cleanup-jobs, nodes/cloud, nodes/edge, kcm, components, label-nodes, verify)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('--skip-workload-restart', '--skip-workload-restart', [CompletionResultType]::ParameterName, 'Do not restart the nodes'' workload containers after the kubelet changes API server address (by default they are, so pods see the matching KUBERNETES_SERVICE_HOST/PORT)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;upgrade' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'The profile to upgrade to (one whose profile.yaml names the cluster''s in upgradeFrom)')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]')
            [CompletionResult]::new('--openyurt-version', '--openyurt-version', [CompletionResultType]::ParameterName, 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)')
            [CompletionResult]::new('--image-repository', '--image-repository', [CompletionResultType]::ParameterName, 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A Secret in kube-system the node Jobs and the components pull their images with (repeatable) [default: the ones convert was given]')
            [CompletionResult]::new('--max-unavailable', '--max-unavailable', [CompletionResultType]::ParameterName, 'Nodes moving at once: an integer or a percentage of the targeted nodes, rounded up. A node holds its place from its Job''s start until it is Ready again')
            [CompletionResult]::new('--partition', '--partition', [CompletionResultType]::ParameterName, 'Nodes kept on the old release (the last ones in upgrade order): an integer or a percentage of the targeted nodes, rounded down; a later run with a smaller one moves them')
            [CompletionResult]::new('--priority', '--priority', [CompletionResultType]::ParameterName, 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name; edge nodes move before cloud nodes)')
            [CompletionResult]::new('--canary', '--canary', [CompletionResultType]::ParameterName, 'Move only the first N nodes in this run, then stop (re-run to continue)')
            [CompletionResult]::new('--max-failures', '--max-failures', [CompletionResultType]::ParameterName, 'Nodes that may fail (or stay NotReady) before the upgrade halts (0: at the first)')
            [CompletionResult]::new('--job-timeout', '--job-timeout', [CompletionResultType]::ParameterName, 'Time allowed for each node''s Job, and then for the node to be Ready again')
            [CompletionResult]::new('--skip-phases', '--skip-phases', [CompletionResultType]::ParameterName, 'Phases to skip (comma-separated ids, in run order: lock, preflight, kcm, components, label-nodes, nodes/edge, nodes/cloud, cleanup, migrate, verify)')
            [CompletionResult]::new('--ignore-preflight-errors', '--ignore-preflight-errors', [CompletionResultType]::ParameterName, 'Preflight checks whose errors become warnings (comma-separated, any case: KubernetesVersion, or all)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Move only the nodes whose labels match (kubectl syntax), e.g. a canary; the components change for every node, the old release''s objects stay until a run without -l has moved the rest')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Move only the nodes whose labels match (kubectl syntax), e.g. a canary; the components change for every node, the old release''s objects stay until a run without -l has moved the rest')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--pause', '--pause', [CompletionResultType]::ParameterName, 'Change the components and labels but move no node (re-run without --pause to resume)')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete the lock kube-system/yurtctl-lock first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('--force-conflicts', '--force-conflicts', [CompletionResultType]::ParameterName, 'Take over fields of our objects that other field managers own (server-side apply)')
            [CompletionResult]::new('--rollback', '--rollback', [CompletionResultType]::ParameterName, 'Return the cluster to the release and options the last upgrade came from, from any mix of moved and unmoved nodes (the rollout flags apply; the target is the journal''s)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;status' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;diagnose' {
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the read-only node Jobs [default: the one convert used, else yurtctl''s own]')
            [CompletionResult]::new('--job-timeout', '--job-timeout', [CompletionResultType]::ParameterName, 'Time allowed for each node''s read-only Job')
            [CompletionResult]::new('--collect', '--collect', [CompletionResultType]::ParameterName, 'Also write what a bug report needs into one .tar.gz in DIR, secrets and tokens redacted: the findings, versions, kube-system''s events, the logs of yurtctl''s node Job pods and of yurt-manager, the journal')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;staticpod' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('upgrade', 'upgrade', [CompletionResultType]::ParameterValue, 'Roll a new revision of a static pod out to the nodes that run it')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)')
            [CompletionResult]::new('rollback', 'rollback', [CompletionResultType]::ParameterValue, 'Roll a previous revision out again, with the same controls as upgrade')
            [CompletionResult]::new('ota', 'ota', [CompletionResultType]::ParameterValue, 'OTA: upgrade chosen nodes now, from the client side')
            [CompletionResult]::new('adopt', 'adopt', [CompletionResultType]::ParameterValue, 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;staticpod;upgrade' {
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'New image, `IMAGE` for a single-container pod or `CONTAINER=IMAGE` (repeatable)')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'The new pod (one v1 Pod document)')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'The new pod (one v1 Pod document)')
            [CompletionResult]::new('--manifest', '--manifest', [CompletionResultType]::ParameterName, 'The manifest file''s base name on nodes and the ConfigMap key [default: the stored one, else NAME]')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'How nodes get the new revision')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only nodes whose labels match this selector (kubectl syntax)')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only nodes whose labels match this selector (kubectl syntax)')
            [CompletionResult]::new('--max-unavailable', '--max-unavailable', [CompletionResultType]::ParameterName, 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up')
            [CompletionResult]::new('--min-ready-seconds', '--min-ready-seconds', [CompletionResultType]::ParameterName, 'A node counts as upgraded once its new pod has been Ready this long')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed')
            [CompletionResult]::new('--max-failures', '--max-failures', [CompletionResultType]::ParameterName, 'Failed nodes tolerated before the rollout stops (0: stop at the first)')
            [CompletionResult]::new('--partition', '--partition', [CompletionResultType]::ParameterName, 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down')
            [CompletionResult]::new('--priority', '--priority', [CompletionResultType]::ParameterName, 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)')
            [CompletionResult]::new('--canary', '--canary', [CompletionResultType]::ParameterName, 'Upgrade only N nodes in this run, then stop (re-run to continue)')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--pause', '--pause', [CompletionResultType]::ParameterName, 'Store the new revision but start no node (re-run without --pause to resume)')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;staticpod;status' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Print again whenever the status changes (a mirror pod or the stored revision; with -o json|yaml one document per change); runs until Ctrl-C')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Print again whenever the status changes (a mirror pod or the stored revision; with -o json|yaml one document per change); runs until Ctrl-C')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'yurtctl;staticpod;rollback' {
            [CompletionResult]::new('--to-revision', '--to-revision', [CompletionResultType]::ParameterName, 'The revision number to go back to (see `status -o yaml`) [default: the previous one]')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'How nodes get the old revision')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Only nodes whose labels match this selector (kubectl syntax)')
            [CompletionResult]::new('--selector', '--selector', [CompletionResultType]::ParameterName, 'Only nodes whose labels match this selector (kubectl syntax)')
            [CompletionResult]::new('--max-unavailable', '--max-unavailable', [CompletionResultType]::ParameterName, 'Nodes upgrading (or settling) at once: an integer or a percentage of the target nodes, rounded up')
            [CompletionResult]::new('--min-ready-seconds', '--min-ready-seconds', [CompletionResultType]::ParameterName, 'A node counts as upgraded once its new pod has been Ready this long')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Time allowed per node (Job and new pod Ready); then it is restored and counts as failed')
            [CompletionResult]::new('--max-failures', '--max-failures', [CompletionResultType]::ParameterName, 'Failed nodes tolerated before the rollout stops (0: stop at the first)')
            [CompletionResult]::new('--partition', '--partition', [CompletionResultType]::ParameterName, 'Nodes kept on the old revision (the last ones in rollout order): integer or percentage, rounded down')
            [CompletionResult]::new('--priority', '--priority', [CompletionResultType]::ParameterName, 'Node-label weight for the order, `LABEL=VALUE:WEIGHT` (repeatable; higher first, ties by node name)')
            [CompletionResult]::new('--canary', '--canary', [CompletionResultType]::ParameterName, 'Upgrade only N nodes in this run, then stop (re-run to continue)')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--pause', '--pause', [CompletionResultType]::ParameterName, 'Store the new revision but start no node (re-run without --pause to resume)')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;staticpod;ota' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;staticpod;ota;apply' {
            [CompletionResult]::new('--node', '--node', [CompletionResultType]::ParameterName, 'Nodes to upgrade now (repeatable or comma-separated)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Time allowed per node (Job and new pod Ready); then it is restored')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs running `yurtctl node-servant static-pod-upgrade`')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A Secret of type kubernetes.io/dockerconfigjson in the static pod''s namespace the node Jobs pull the servant image with (repeatable)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--force-unlock', '--force-unlock', [CompletionResultType]::ParameterName, 'Delete this static pod''s rollout lock (Lease yurtctl-staticpod-NAME) first, whoever holds it (only when that run is known to be dead)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'yurtctl;staticpod;ota;help' {
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;staticpod;ota;help;apply' {
            break
        }
        'yurtctl;staticpod;ota;help;help' {
            break
        }
        'yurtctl;staticpod;adopt' {
            [CompletionResult]::new('--manifest', '--manifest', [CompletionResultType]::ParameterName, 'The manifest file''s base name on nodes (spec.staticPodManifest) [default: the stored one, else NAME]')
            [CompletionResult]::new('--strategy', '--strategy', [CompletionResultType]::ParameterName, 'The set''s upgradeStrategy: how yurt-manager rolls out later template changes')
            [CompletionResult]::new('--max-unavailable', '--max-unavailable', [CompletionResultType]::ParameterName, 'The set''s maxUnavailable (advanced-rolling-update)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;staticpod;help' {
            [CompletionResult]::new('upgrade', 'upgrade', [CompletionResultType]::ParameterValue, 'Roll a new revision of a static pod out to the nodes that run it')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)')
            [CompletionResult]::new('rollback', 'rollback', [CompletionResultType]::ParameterValue, 'Roll a previous revision out again, with the same controls as upgrade')
            [CompletionResult]::new('ota', 'ota', [CompletionResultType]::ParameterValue, 'OTA: upgrade chosen nodes now, from the client side')
            [CompletionResult]::new('adopt', 'adopt', [CompletionResultType]::ParameterValue, 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;staticpod;help;upgrade' {
            break
        }
        'yurtctl;staticpod;help;status' {
            break
        }
        'yurtctl;staticpod;help;rollback' {
            break
        }
        'yurtctl;staticpod;help;ota' {
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)')
            break
        }
        'yurtctl;staticpod;help;ota;apply' {
            break
        }
        'yurtctl;staticpod;help;adopt' {
            break
        }
        'yurtctl;staticpod;help;help' {
            break
        }
        'yurtctl;images' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Pull those images on the nodes, without running them, to check each node can')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;images;list' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Component set whose images to list')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]')
            [CompletionResult]::new('--openyurt-version', '--openyurt-version', [CompletionResultType]::ParameterName, 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)')
            [CompletionResult]::new('--image-repository', '--image-repository', [CompletionResultType]::ParameterName, 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;images;pull' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Component set whose images to pull')
            [CompletionResult]::new('--servant-image', '--servant-image', [CompletionResultType]::ParameterName, 'Image of the node Jobs (yurtctl''s own image) [default: the profile''s]')
            [CompletionResult]::new('--openyurt-version', '--openyurt-version', [CompletionResultType]::ParameterName, 'Another patch release of the profile''s OpenYurt version (sets the OpenYurt image tags)')
            [CompletionResult]::new('--image-repository', '--image-repository', [CompletionResultType]::ParameterName, 'Pull every image from this registry (and path) instead, keeping its name and tag, as kubeadm''s flag does: openyurt/yurthub:v1.7.0 becomes REPOSITORY/yurthub:v1.7.0 (--image and --servant-image still name one image in full)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Use IMAGE for COMPONENT (repeatable; components are the profile''s image keys)')
            [CompletionResult]::new('--image-pull-secret', '--image-pull-secret', [CompletionResultType]::ParameterName, 'A Secret in kube-system the node Jobs pull with (repeatable); the nodes'' runtime pulls the other images with its own credentials, as the kubelet''s pulls for pods without pull Secrets do')
            [CompletionResult]::new('--job-timeout', '--job-timeout', [CompletionResultType]::ParameterName, 'How long each node''s Job may take, its pulls included')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;images;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Pull those images on the nodes, without running them, to check each node can')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;images;help;list' {
            break
        }
        'yurtctl;images;help;pull' {
            break
        }
        'yurtctl;images;help;help' {
            break
        }
        'yurtctl;completion' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;man' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Write every page (yurtctl.1, yurtctl-convert.1, …) into this directory instead of printing yurtctl(1) on stdout')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'yurtctl;playground' {
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Nodes of the simulated cluster (one of them the control plane)')
            [CompletionResult]::new('--layout', '--layout', [CompletionResultType]::ParameterName, 'What the nodes'' disks look like (kubelet unit files, kubeadm-flags.env, …): kubeadm (deb packages), kubeadm-usr (pkgs.k8s.io / rpm), kind or minikube')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Component set convert installs')
            [CompletionResult]::new('--apiserver', '--apiserver', [CompletionResultType]::ParameterName, 'The API server: yurtsim''s own (sim), or a real Kubernetes v1.37.2 control plane with OpenYurt v1.7.0''s real yurt-manager and YurtHub (real: a checkout of yurtctl where tests/real/build.sh has built them; profile openyurt-v1.7)')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Where the cluster keeps its state (kubeconfig, node file systems) [default: a new temporary directory, removed at the end]')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format of the result on stdout')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show what would change without changing anything: none|client|server (a bare --dry-run means client)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'Namespace of namespaced objects a command names (static pods)')
            [CompletionResult]::new('--qps', '--qps', [CompletionResultType]::ParameterName, 'Client-side limit of API requests per second (0: no limit; requests in flight are bounded by --concurrency and the server''s API Priority and Fairness)')
            [CompletionResult]::new('--burst', '--burst', [CompletionResultType]::ParameterName, 'API requests allowed in a burst above a --qps limit')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress on stderr: auto (bars on a terminal, plain lines in CI and pipes), bars, plain or none')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Keep the cluster running after the last step until Ctrl-C [default: when stdin is a terminal]')
            [CompletionResult]::new('--no-keep', '--no-keep', [CompletionResultType]::ParameterName, 'Shut the cluster down after the last step')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More log detail on stderr (-v debug, -vv trace)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Only warnings and errors on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required when stdin is not a terminal)')
            [CompletionResult]::new('--no-color', '--no-color', [CompletionResultType]::ParameterName, 'No colours (also when the NO_COLOR environment variable is set)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'yurtctl;help' {
            [CompletionResult]::new('convert', 'convert', [CompletionResultType]::ParameterValue, 'Convert this Kubernetes cluster into an OpenYurt cluster')
            [CompletionResult]::new('revert', 'revert', [CompletionResultType]::ParameterValue, 'Turn an OpenYurt cluster made by convert back into the original cluster')
            [CompletionResult]::new('upgrade', 'upgrade', [CompletionResultType]::ParameterValue, 'Move a cluster yurtctl converted to a newer OpenYurt, in place')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what convert did and where each node stands (read-only)')
            [CompletionResult]::new('diagnose', 'diagnose', [CompletionResultType]::ParameterValue, 'Find what is wrong in a converted cluster, and what to do about it (read-only)')
            [CompletionResult]::new('staticpod', 'staticpod', [CompletionResultType]::ParameterValue, 'Roll out, inspect and roll back static pods across nodes, from the client side')
            [CompletionResult]::new('images', 'images', [CompletionResultType]::ParameterValue, 'List the images a conversion pulls, to mirror them for air-gapped clusters')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Write man pages (one per command) to a directory, or yurtctl(1) to stdout')
            [CompletionResult]::new('playground', 'playground', [CompletionResultType]::ParameterValue, 'Try yurtctl on an embedded simulated cluster (no Kubernetes needed)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'yurtctl;help;convert' {
            break
        }
        'yurtctl;help;revert' {
            break
        }
        'yurtctl;help;upgrade' {
            break
        }
        'yurtctl;help;status' {
            break
        }
        'yurtctl;help;diagnose' {
            break
        }
        'yurtctl;help;staticpod' {
            [CompletionResult]::new('upgrade', 'upgrade', [CompletionResultType]::ParameterValue, 'Roll a new revision of a static pod out to the nodes that run it')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show TOTAL / READY / UPGRADED of a static pod (-o wide: per node)')
            [CompletionResult]::new('rollback', 'rollback', [CompletionResultType]::ParameterValue, 'Roll a previous revision out again, with the same controls as upgrade')
            [CompletionResult]::new('ota', 'ota', [CompletionResultType]::ParameterValue, 'OTA: upgrade chosen nodes now, from the client side')
            [CompletionResult]::new('adopt', 'adopt', [CompletionResultType]::ParameterValue, 'Hand a running static pod to yurt-manager: create a YurtStaticSet from what it runs')
            break
        }
        'yurtctl;help;staticpod;upgrade' {
            break
        }
        'yurtctl;help;staticpod;status' {
            break
        }
        'yurtctl;help;staticpod;rollback' {
            break
        }
        'yurtctl;help;staticpod;ota' {
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Upgrade the static pod on these nodes to the stored revision (a node Job on each)')
            break
        }
        'yurtctl;help;staticpod;ota;apply' {
            break
        }
        'yurtctl;help;staticpod;adopt' {
            break
        }
        'yurtctl;help;images' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'Print every image a conversion makes nodes pull, one per line (read-only; no cluster)')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Pull those images on the nodes, without running them, to check each node can')
            break
        }
        'yurtctl;help;images;list' {
            break
        }
        'yurtctl;help;images;pull' {
            break
        }
        'yurtctl;help;completion' {
            break
        }
        'yurtctl;help;man' {
            break
        }
        'yurtctl;help;playground' {
            break
        }
        'yurtctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
