// Package tritonpb holds the Go types of model_config.proto, the subset of Triton's model
// configuration that `plan export` writes; the export package parses config.pbtxt files
// with prototext into them (validation and read-back). Regenerate with `make generate`.
package tritonpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative model_config.proto
