package supervise

import "golang.org/x/sys/unix"

// sysDup2 is dup2's number; newer architectures (arm64) have only dup3.
const sysDup2 = unix.SYS_DUP2

// dup2Calls are the names of rangeCalls this architecture adds.
var dup2Calls = []string{"dup2"}
