//go:build !amd64

package supervise

// sysDup2 is dup2's number: none here (dup3 only).
const sysDup2 = -1

var dup2Calls []string
