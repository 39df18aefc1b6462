module github.com/gaissmai/bart

go 1.24.0

retract v0.20.5 // introduced a bug in InsertPersist
