module github.com/nlemu/nlemu

go 1.26.8

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	github.com/gaissmai/bart v0.30.0
	github.com/google/go-cmp v0.7.0
	github.com/jsimonetti/rtnetlink/v2 v2.3.0
	github.com/mdlayher/netlink v1.11.2
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/net v0.55.0
	golang.org/x/sync v0.25.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.44.0
)

require (
	github.com/mdlayher/socket v0.6.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
)

replace github.com/gaissmai/bart => ./third_party/bart
