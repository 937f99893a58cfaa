// Package kubecheck checks the Kubernetes manifests of deploy/kubernetes: they decode strictly
// into the k8s.io/api types, and the fields tsdescramble relies on say what they must. It is a
// module of its own so that the command's module does not depend on k8s.io/api.
package kubecheck
