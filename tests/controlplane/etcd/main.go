// Command etcd is upstream's etcd server, built from its Go module for the real-control-plane tests.
// It is what etcd's own server/main.go does: hand the arguments to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
