package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
)

// runStats implements `nlemu stats [--json]`.
func runStats(args []string) int {
	fs := flag.NewFlagSet("nlemu stats", flag.ContinueOnError)
	sock := fs.String("socket", "", "server socket path")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, ok := dialAdmin("nlemu stats", *sock)
	if !ok {
		return 1
	}
	defer c.Close()
	st, err := c.ServerStats()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nlemu stats: %s\n", oneLine(err))
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(st)
		fmt.Println(string(b))
		return 0
	}
	fmt.Printf("rtnl mode            %s\n", st.RTNLMode)
	fmt.Printf("rtnl acquisitions    %d\n", st.RTNLAcquisitions)
	fmt.Printf("rtnl wait / hold     %.6fs / %.6fs\n", st.RTNLWaitS, st.RTNLHoldS)
	fmt.Printf("namespaces           %d\n", st.Namespaces)
	fmt.Printf("sockets              %d\n", st.Sockets)
	fmt.Printf("datagrams            %d\n", st.Datagrams)
	fmt.Printf("peak RSS             %.1f MiB\n", float64(st.PeakRSSBytes)/(1<<20))
	printMap("messages", st.Messages)
	printMap("errors", st.Errors)
	rules := map[string]uint64{}
	for k, v := range st.Rules {
		rules[k] = uint64(v)
	}
	printMap("rules", rules)
	routes := map[string]uint64{}
	for k, v := range st.Routes {
		routes[k] = uint64(v)
	}
	printMap("routes", routes)
	printMap("route changes", st.RouteChanges)
	return 0
}

func printMap(title string, m map[string]uint64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%-20s %-14s %d\n", title, k, m[k])
	}
}
