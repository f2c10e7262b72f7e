// Command gencompat writes docs/compatibility.md from the compatibility
// matrix (internal/compat):
//
//	go generate ./internal/compat
//	go run ./internal/compat/gencompat docs/compatibility.md   # from the repository's root
package main

import (
	"log"
	"os"

	"github.com/tfmirror/tfmirror/internal/compat"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gencompat: ")
	if len(os.Args) != 2 {
		log.Fatal("usage: gencompat FILE")
	}
	page, err := compat.Markdown()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[1], page, 0o644); err != nil {
		log.Fatal(err)
	}
}
