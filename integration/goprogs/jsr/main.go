// Command jsr runs jsrscript on github.com/jsimonetti/rtnetlink's own
// connection (rtnetlink.Dial: a raw NETLINK_ROUTE socket), for the
// differential runs in integration/goclients_test.go: built static, it runs
// in a kernel namespace and under `nlemu exec`.
package main

import (
	"fmt"
	"os"

	"github.com/jsimonetti/rtnetlink/v2"

	"github.com/nlemu/nlemu/integration/goprogs/jsrscript"
)

func main() {
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsr: dial:", err)
		os.Exit(1)
	}
	defer c.Close()
	jsrscript.Run(jsrscript.FromConn(c), os.Stdout)
}
