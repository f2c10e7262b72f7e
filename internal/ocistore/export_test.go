package ocistore

// SetLayoutFault makes s ask fault before each write into an image
// layout (a blob or manifest, index.json), failing the write with the
// error it returns: how tests crash a push at a given write. Set it
// before s first opens a repository.
func SetLayoutFault(s *Store, fault func(what string) error) { s.layoutFault = fault }
