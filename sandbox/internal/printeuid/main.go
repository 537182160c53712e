// Command printeuid prints "euid N", its effective user id. The sandbox's
// tests install it set-user-ID root and run it from a worker under another
// account: with no_new_privs the exec does not raise the worker, and it
// prints the worker's uid; without, it prints 0.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("euid %d", os.Geteuid())
}
