// Package inferencepb holds the Go code generated from grpc_service.proto, the KServe v2
// gRPC protocol (package inference, service GRPCInferenceService). Do not edit the
// generated files: `make generate` reproduces them and the drift test in serve/kservegrpc
// fails when they differ.
package inferencepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative grpc_service.proto
