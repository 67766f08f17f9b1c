package formats

// inTree is the set of the typed sections whose validation lives in their system's package:
// formats' own tests run the rules the registry runs in production. It is
// installed by intree_ext_test.go, whose package (formats_test) may import those packages.
var inTree *SectionSet

// SetInTreeSections installs inTree (test binary only).
func SetInTreeSections(s *SectionSet) { inTree = s }
