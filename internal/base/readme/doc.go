// Package readme holds the test that runs every command of the repository's README.md as a
// new user would after `make`: see readme_test.go for what it runs and what it leaves out.
package readme
