package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/resources"
)

// ResourceUpload is a new version of a resource: its content (base64 in
// JSON), at most the server's resource size limit.
type ResourceUpload struct {
	Name     string `json:"name" max:"200" required:"true"`
	Content  []byte `json:"content" max:"33554432"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// ResourceList is the resources the caller may use.
type ResourceList struct {
	Resources []resources.Resource `json:"resources"`
	// MaxSize is the server's limit on a resource's size, in bytes.
	MaxSize int64 `json:"max_size"`
}

// ResourceContent is a version of a resource and its content.
type ResourceContent struct {
	Name    string            `json:"name"`
	Version resources.Version `json:"version"`
	Content []byte            `json:"content"`
}

// UseGrant gives a user the use of a resource or data source, or takes it
// back (revoke).
type UseGrant struct {
	User     string `json:"user" max:"256" required:"true"`
	Revoke   bool   `json:"revoke,omitempty"`
	Identity string `json:"identity,omitempty" max:"256"`
}

// DataSourceRequest creates or changes a data source.
type DataSourceRequest struct {
	Name        string `json:"name,omitempty" max:"100"`
	Type        string `json:"type" enum:"postgresql,sqlite" required:"true"`
	URL         string `json:"url" max:"4096" required:"true"`
	Password    string `json:"password,omitempty" max:"4096"`
	Description string `json:"description,omitempty" max:"1000"`
	SkipCheck   bool   `json:"skip_check,omitempty"`
	Identity    string `json:"identity,omitempty" max:"256"`
}

// DataSourceList is the data sources the caller may use.
type DataSourceList struct {
	DataSources []resources.DataSource `json:"datasources"`
}

// UDFRequest creates or changes a UDF.
type UDFRequest struct {
	Type        string `json:"type" enum:"postgresql,sqlite" required:"true"`
	Resource    string `json:"resource" max:"220" required:"true"`
	Description string `json:"description,omitempty" max:"1000"`
	Identity    string `json:"identity,omitempty" max:"256"`
}

// UDFList is the UDFs.
type UDFList struct {
	UDFs []resources.UDF `json:"udfs"`
}

// UseCheck asks whether the caller may use what a definition names.
type UseCheck struct {
	Uses     []resources.Use `json:"uses" max:"10000"`
	Identity string          `json:"identity,omitempty" max:"256"`
}

// UseAnswers answer a UseCheck, use by use.
type UseAnswers struct {
	Answers []resources.Answer `json:"answers"`
}

// resourceRoutes are the routes of the resource centre: resources, UDFs
// and data sources (package dag/resources). Names with '/' go in the path
// escaped (%2F).
func resourceRoutes(h *handler, c *resources.Centre) []Route {
	res := prefix + "/resources"
	one := res + "/{name}"
	dss := prefix + "/datasources"
	ds := dss + "/{name}"
	udfs := prefix + "/udfs"
	udf := udfs + "/{name}"
	return []Route{
		{"GET", res, "List the resources the caller may use, with their versions", get(h, func(ctx context.Context, _ *http.Request) (ResourceList, error) {
			all, err := c.Resources(ctx)
			return ResourceList{Resources: all, MaxSize: c.MaxSize()}, err
		})},
		{"POST", res, "Upload a resource: a new version of it (the first makes the caller its owner); one over the server's size limit is refused and nothing is stored", call(h, func(ctx context.Context, _ *http.Request, req ResourceUpload) (resources.Resource, error) {
			return c.Upload(ctx, req.Name, req.Content)
		})},
		{"GET", one, "Describe a resource and its versions", get(h, func(ctx context.Context, r *http.Request) (resources.Resource, error) {
			return c.Resource(ctx, r.PathValue("name"))
		})},
		{"GET", one + "/versions/{version}", "Get a version of a resource (a number, or latest) with its content", get(h, func(ctx context.Context, r *http.Request) (ResourceContent, error) {
			v := r.PathValue("version")
			if v == "latest" {
				v = "0"
			}
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return ResourceContent{}, api.InvalidArgument("version", "want a version number or latest, got %q", r.PathValue("version"))
			}
			ver, content, err := c.Content(ctx, r.PathValue("name"), int32(n))
			return ResourceContent{Name: r.PathValue("name"), Version: ver, Content: content}, err
		})},
		{"DELETE", one, "Delete a resource and all its versions (its owner or a cluster admin)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, c.DeleteResource(ctx, r.PathValue("name"))
		})},
		{"POST", one + "/grants", "Let a user use a resource, or no longer (revoke)", call(h, func(ctx context.Context, r *http.Request, req UseGrant) (resources.Resource, error) {
			return c.GrantResource(ctx, r.PathValue("name"), req.User, req.Revoke)
		})},

		{"GET", dss, "List the data sources the caller may use (never their passwords)", get(h, func(ctx context.Context, _ *http.Request) (DataSourceList, error) {
			all, err := c.DataSources(ctx)
			return DataSourceList{DataSources: all}, err
		})},
		{"POST", dss, "Create a data source: its connection is checked first (unless skip_check) and nothing is stored when it fails; the password is kept encrypted", call(h, func(ctx context.Context, _ *http.Request, req DataSourceRequest) (resources.DataSource, error) {
			return c.PutDataSource(ctx, resources.DataSourceSpec{Name: req.Name, Type: req.Type, URL: req.URL, Password: req.Password,
				Description: req.Description, SkipCheck: req.SkipCheck}, false)
		})},
		{"GET", ds, "Describe a data source (never its password)", get(h, func(ctx context.Context, r *http.Request) (resources.DataSource, error) {
			return c.DataSource(ctx, r.PathValue("name"))
		})},
		{"PUT", ds, "Change a data source (its owner or a cluster admin); the connection is checked first", call(h, func(ctx context.Context, r *http.Request, req DataSourceRequest) (resources.DataSource, error) {
			return c.PutDataSource(ctx, resources.DataSourceSpec{Name: r.PathValue("name"), Type: req.Type, URL: req.URL, Password: req.Password,
				Description: req.Description, SkipCheck: req.SkipCheck}, true)
		}).pathFields("name")},
		{"DELETE", ds, "Delete a data source (its owner or a cluster admin)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, c.DeleteDataSource(ctx, r.PathValue("name"))
		})},
		{"POST", ds + "/grants", "Let a user use a data source, or no longer (revoke)", call(h, func(ctx context.Context, r *http.Request, req UseGrant) (resources.DataSource, error) {
			return c.GrantDataSource(ctx, r.PathValue("name"), req.User, req.Revoke)
		})},
		{"POST", ds + "/test", "Check that a data source answers from the server", call(h, func(ctx context.Context, r *http.Request, _ struct{}) (struct{}, error) {
			return struct{}{}, c.Test(ctx, r.PathValue("name"))
		})},
		{"GET", ds + "/connection", "A data source's connection with its password, for workers: cluster admins and service accounts holding the worker role in a namespace", get(h, func(ctx context.Context, r *http.Request) (resources.Connection, error) {
			return c.Connect(ctx, r.PathValue("name"))
		})},

		{"GET", udfs, "List the UDFs of sql tasks", get(h, func(ctx context.Context, _ *http.Request) (UDFList, error) {
			all, err := c.UDFs(ctx)
			return UDFList{UDFs: all}, err
		})},
		{"GET", udf, "Describe a UDF", get(h, func(ctx context.Context, r *http.Request) (resources.UDF, error) {
			return c.UDF(ctx, r.PathValue("name"))
		})},
		{"PUT", udf, "Create or change a UDF: a function sql tasks create in their session, its text a resource", call(h, func(ctx context.Context, r *http.Request, req UDFRequest) (resources.UDF, error) {
			return c.PutUDF(ctx, resources.UDF{Name: r.PathValue("name"), Type: req.Type, Resource: req.Resource, Description: req.Description})
		})},
		{"DELETE", udf, "Delete a UDF (its owner or a cluster admin)", get(h, func(ctx context.Context, r *http.Request) (struct{}, error) {
			return struct{}{}, c.DeleteUDF(ctx, r.PathValue("name"))
		})},

		{"POST", prefix + "/resource-checks", "Check that the resources, data sources and UDFs a definition names exist and that the caller may use them", call(h, func(ctx context.Context, _ *http.Request, req UseCheck) (UseAnswers, error) {
			a, err := c.CheckUses(ctx, req.Uses)
			return UseAnswers{Answers: a}, err
		})},
	}
}
