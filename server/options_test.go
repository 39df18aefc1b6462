package server_test

import "github.com/nlemu/nlemu/server"

var optsExtAck = server.Options{ExtAck: true}
