package remote

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/server"
)

// The calls of the resource centre of DAG pipelines: resources, UDFs and
// data sources (package dag/resources), done by a server for a caller
// allowed to.

func resPath(name string) string { return "/resources/" + url.PathEscape(name) }

// UploadResource stores content as a new version of the resource name.
func (s *Service) UploadResource(ctx context.Context, name string, content []byte, identity string) (resources.Resource, error) {
	var out resources.Resource
	_, err := s.do(ctx, sendOnce, "POST", "/resources", server.ResourceUpload{Name: name, Content: content, Identity: identity}, &out)
	return out, err
}

// ListResources lists the resources the caller may use.
func (s *Service) ListResources(ctx context.Context) (server.ResourceList, error) {
	var out server.ResourceList
	_, err := s.do(ctx, idempotent, "GET", "/resources", nil, &out)
	return out, err
}

// DescribeResource describes a resource and its versions.
func (s *Service) DescribeResource(ctx context.Context, name string) (resources.Resource, error) {
	var out resources.Resource
	_, err := s.do(ctx, idempotent, "GET", resPath(name), nil, &out)
	return out, err
}

// ResourceContent returns version v of a resource (0: the latest) with its
// content.
func (s *Service) ResourceContent(ctx context.Context, name string, v int32) (server.ResourceContent, error) {
	var out server.ResourceContent
	ver := "latest"
	if v > 0 {
		ver = strconv.Itoa(int(v))
	}
	_, err := s.do(ctx, idempotent, "GET", resPath(name)+"/versions/"+ver, nil, &out)
	return out, err
}

// DeleteResource deletes a resource and its versions.
func (s *Service) DeleteResource(ctx context.Context, name string) error {
	_, err := s.do(ctx, idempotent, "DELETE", resPath(name), nil, nil)
	return err
}

// GrantResource lets user use a resource (revoke: no longer).
func (s *Service) GrantResource(ctx context.Context, name, user string, revoke bool) (resources.Resource, error) {
	var out resources.Resource
	_, err := s.do(ctx, idempotent, "POST", resPath(name)+"/grants", server.UseGrant{User: user, Revoke: revoke}, &out)
	return out, err
}

func dsPath(name string) string { return "/datasources/" + url.PathEscape(name) }

// CreateDataSource creates a data source (update: changes it).
func (s *Service) CreateDataSource(ctx context.Context, req server.DataSourceRequest, update bool) (resources.DataSource, error) {
	var out resources.DataSource
	var err error
	if update {
		_, err = s.do(ctx, idempotent, "PUT", dsPath(req.Name), req, &out)
	} else {
		_, err = s.do(ctx, sendOnce, "POST", "/datasources", req, &out)
	}
	return out, err
}

// ListDataSources lists the data sources the caller may use.
func (s *Service) ListDataSources(ctx context.Context) ([]resources.DataSource, error) {
	var out server.DataSourceList
	_, err := s.do(ctx, idempotent, "GET", "/datasources", nil, &out)
	return out.DataSources, err
}

// DescribeDataSource describes a data source (never its password).
func (s *Service) DescribeDataSource(ctx context.Context, name string) (resources.DataSource, error) {
	var out resources.DataSource
	_, err := s.do(ctx, idempotent, "GET", dsPath(name), nil, &out)
	return out, err
}

// DeleteDataSource deletes a data source.
func (s *Service) DeleteDataSource(ctx context.Context, name string) error {
	_, err := s.do(ctx, idempotent, "DELETE", dsPath(name), nil, nil)
	return err
}

// GrantDataSource lets user use a data source (revoke: no longer).
func (s *Service) GrantDataSource(ctx context.Context, name, user string, revoke bool) (resources.DataSource, error) {
	var out resources.DataSource
	_, err := s.do(ctx, idempotent, "POST", dsPath(name)+"/grants", server.UseGrant{User: user, Revoke: revoke}, &out)
	return out, err
}

// TestDataSource checks from the server that a data source answers.
func (s *Service) TestDataSource(ctx context.Context, name string) error {
	_, err := s.do(ctx, idempotent, "POST", dsPath(name)+"/test", struct{}{}, nil)
	return err
}

// ConnectDataSource returns a data source's connection, password
// included: a worker's call.
func (s *Service) ConnectDataSource(ctx context.Context, name string) (resources.Connection, error) {
	var out resources.Connection
	_, err := s.do(ctx, idempotent, "GET", dsPath(name)+"/connection", nil, &out)
	return out, err
}

func udfPath(name string) string { return "/udfs/" + url.PathEscape(name) }

// PutUDF creates or changes a UDF.
func (s *Service) PutUDF(ctx context.Context, name string, req server.UDFRequest) (resources.UDF, error) {
	var out resources.UDF
	_, err := s.do(ctx, idempotent, "PUT", udfPath(name), req, &out)
	return out, err
}

// ListUDFs lists the UDFs.
func (s *Service) ListUDFs(ctx context.Context) ([]resources.UDF, error) {
	var out server.UDFList
	_, err := s.do(ctx, idempotent, "GET", "/udfs", nil, &out)
	return out.UDFs, err
}

// DescribeUDF describes a UDF.
func (s *Service) DescribeUDF(ctx context.Context, name string) (resources.UDF, error) {
	var out resources.UDF
	_, err := s.do(ctx, idempotent, "GET", udfPath(name), nil, &out)
	return out, err
}

// DeleteUDF deletes a UDF.
func (s *Service) DeleteUDF(ctx context.Context, name string) error {
	_, err := s.do(ctx, idempotent, "DELETE", udfPath(name), nil, nil)
	return err
}

// CheckUses asks whether the caller may use what a definition names (what
// dag.Catalog.Apply checks). A server without a resource centre answers
// nothing: nil answers, no error.
func (s *Service) CheckUses(ctx context.Context, uses []resources.Use) ([]resources.Answer, error) {
	var out server.UseAnswers
	_, err := s.do(ctx, idempotent, "POST", "/resource-checks", server.UseCheck{Uses: uses}, &out)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil
	}
	return out.Answers, err
}
