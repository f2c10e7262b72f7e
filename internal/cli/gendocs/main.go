// Command gendocs writes tfmirror's command reference (docs/cli) from the
// cobra command tree:
//
//	go generate ./internal/cli
//	go run ./internal/cli/gendocs docs/cli   # the same, from the repository's root
package main

import (
	"log"
	"os"

	"github.com/tfmirror/tfmirror/internal/cli"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gendocs: ")
	if len(os.Args) != 2 {
		log.Fatal("usage: gendocs DIR")
	}
	if err := cli.WriteReference(os.Args[1]); err != nil {
		log.Fatal(err)
	}
}
