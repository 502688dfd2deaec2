// Command draplugin is a TEST DRIVER, not a product: a DRA kubelet plugin for the real-node test tier and
// `make run REALNODE=1`. It is upstream's e2e test driver (k8s.io/kubernetes/test/e2e/dra/test-driver/app,
// started through its StartPlugin) with one change of input: the devices it publishes are read from a JSON
// file of resource.k8s.io/v1 Devices (written by localcluster/realnode from localcluster/nodes.py, so the
// real node's GPUs have the kwok nodes' driver, attributes and `shares` capacity with
// allowMultipleAllocations). SIGHUP re-reads the file and republishes the node's slice. Every gRPC call the
// kubelet makes is logged on one line ("dra-test-plugin call") for the tests to count. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/dra/test-driver/app"
)

// versionStamp is set at link time (scripts/realnode.py: a digest of these sources), so a stale build is seen.
var versionStamp = "dev"

func readDevices(path string) ([]resourceapi.Device, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var devices []resourceapi.Device
	if err := json.Unmarshal(data, &devices); err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of resource.k8s.io/v1 Devices: %w", path, err)
	}
	return devices, nil
}

func resources(nodeName string, devices []resourceapi.Device) resourceslice.DriverResources {
	return resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{
			nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
		},
	}
}

func logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	klog.InfoS("dra-test-plugin call", "method", info.FullMethod, "request", fmt.Sprint(req), "err", err)
	return resp, err
}

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "the node's kubeconfig")
	nodeName := flag.String("node-name", "", "the node this plugin serves")
	driverName := flag.String("driver", "gpu.nvidia.com", "the DRA driver name")
	devicesFile := flag.String("devices", "", "JSON list of resource.k8s.io/v1 Devices to publish")
	cdiDir := flag.String("cdi-dir", "", "where the per-claim CDI specs go (containerd's cdi_spec_dirs)")
	registrarDir := flag.String("registrar-dir", "", "the kubelet's plugins_registry directory")
	dataDir := flag.String("data-dir", "", "the kubelet's plugins/<driver> directory (the DRA socket)")
	stamp := flag.Bool("version-stamp", false, "print the sources' digest this binary was built from, and exit")
	flag.Parse()
	if *stamp {
		fmt.Println(versionStamp)
		return
	}
	if *kubeconfig == "" || *nodeName == "" || *devicesFile == "" || *cdiDir == "" || *registrarDir == "" || *dataDir == "" {
		fmt.Fprintln(os.Stderr, "draplugin: --kubeconfig, --node-name, --devices, --cdi-dir, --registrar-dir and --data-dir are required")
		os.Exit(2)
	}
	devices, err := readDevices(*devicesFile)
	if err != nil {
		klog.ErrorS(err, "read devices")
		os.Exit(1)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.ErrorS(err, "read kubeconfig")
		os.Exit(1)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.ErrorS(err, "create client")
		os.Exit(1)
	}
	for _, dir := range []string{*cdiDir, *registrarDir, *dataDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			klog.ErrorS(err, "create directory", "dir", dir)
			os.Exit(1)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	published := resources(*nodeName, devices)
	plugin, err := app.StartPlugin(ctx, *cdiDir, *driverName, client, *nodeName, app.FileOperations{DriverResources: &published},
		kubeletplugin.RegistrarDirectoryPath(*registrarDir),
		kubeletplugin.PluginDataDirectoryPath(*dataDir),
		kubeletplugin.GRPCInterceptor(logCall),
	)
	if err != nil {
		klog.ErrorS(err, "start plugin")
		os.Exit(1)
	}
	klog.InfoS("dra-test-plugin started", "node", *nodeName, "driver", *driverName, "devices", len(devices))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	for {
		select {
		case <-ctx.Done():
			plugin.Stop()
			klog.InfoS("dra-test-plugin stopped")
			klog.Flush()
			return
		case <-hup:
			devices, err := readDevices(*devicesFile)
			if err != nil {
				klog.ErrorS(err, "re-read devices; keeping the published ones")
				continue
			}
			if err := plugin.PublishResources(ctx, resources(*nodeName, devices)); err != nil {
				klog.ErrorS(err, "republish")
				continue
			}
			klog.InfoS("dra-test-plugin republished", "devices", len(devices))
		}
	}
}
