package resources

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/task"
	"github.com/strandhq/strand/store"
)

// Data source types.
const (
	TypePostgreSQL = "postgresql"
	TypeSQLite     = "sqlite"
)

// DataSource is a database sql tasks name, as list and show tell of it:
// its connection URL without its password, which stays encrypted on the
// server.
type DataSource struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	// HasPassword says a password is kept (encrypted) for it.
	HasPassword bool `json:"has_password,omitempty"`
	Owned
	CreatedAt  time.Time `json:"created_at"`
	ModifiedAt time.Time `json:"modified_at"`
	ModifiedBy string    `json:"modified_by,omitempty"`
}

// storedDataSource is a data source's record: the secret is the whole
// connection URL, password included, sealed with the server's key.
type storedDataSource struct {
	DataSource
	Secret []byte `json:"secret"`
}

// DataSourceSpec is what creating or updating a data source takes.
type DataSourceSpec struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	URL         string `json:"url"`
	Password    string `json:"password,omitempty"`
	Description string `json:"description,omitempty"`
	// SkipCheck stores it without checking that it answers from the
	// server (for a database only the workers reach).
	SkipCheck bool `json:"skip_check,omitempty"`
}

// Connection is a data source as a worker opens it: with its password.
type Connection struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// URL is the full connection URL, password included.
	URL string `json:"url"`
}

// Task returns the data source of the sql task runner.
func (c Connection) Task() task.DataSource {
	if c.Type == TypeSQLite {
		return task.DataSource{Name: c.Name, Driver: "sqlite", DSN: strings.TrimPrefix(strings.TrimPrefix(c.URL, "sqlite:"), "//")}
	}
	return task.DataSource{Name: c.Name, Driver: "postgres", DSN: c.URL}
}

// CheckConnection opens the data source and checks that it answers within
// 10 seconds; a SQLite file must exist.
func CheckConnection(ctx context.Context, c Connection) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return task.CheckDataSource(ctx, c.Task())
}

// normalize checks a spec and returns the display URL (no password) and
// the full one.
func normalize(s DataSourceSpec) (display, full string, err error) {
	if err := checkPlainName("data source", s.Name); err != nil {
		return "", "", err
	}
	switch s.Type {
	case TypePostgreSQL:
		u, perr := url.Parse(s.URL)
		if perr != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return "", "", api.InvalidArgument("url", "want postgres://USER@HOST:PORT/DATABASE for a postgresql data source, got %q", redact(s.URL))
		}
		user := u.User.Username()
		pw, hasPW := u.User.Password()
		if s.Password != "" {
			pw, hasPW = s.Password, true
		}
		if hasPW {
			u.User = url.UserPassword(user, pw)
		}
		full = u.String()
		if user != "" {
			u.User = url.User(user)
		} else {
			u.User = nil
		}
		return u.String(), full, nil
	case TypeSQLite:
		path := strings.TrimPrefix(strings.TrimPrefix(s.URL, "sqlite:"), "//")
		if path == "" {
			return "", "", api.InvalidArgument("url", "want sqlite:PATH for a sqlite data source")
		}
		if s.Password != "" {
			return "", "", api.InvalidArgument("password", "a sqlite data source has no password")
		}
		return "sqlite:" + path, "sqlite:" + path, nil
	case "mysql":
		return "", "", api.InvalidArgument("type", "mysql data sources are not supported yet: want postgresql or sqlite")
	}
	return "", "", api.InvalidArgument("type", "%q: want postgresql or sqlite", s.Type)
}

// redact hides a URL's password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func (c *Centre) seal(plain []byte) ([]byte, error) {
	if c.opts.Key == nil {
		return nil, fmt.Errorf("%w: this server has no key to encrypt data source secrets with (strand server --datasource-key-file)", api.ErrFailedPrecondition)
	}
	block, err := aes.NewCipher(c.opts.Key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, plain, []byte("strand data source")), nil
}

func (c *Centre) open(sealed []byte) ([]byte, error) {
	if c.opts.Key == nil {
		return nil, fmt.Errorf("%w: this server has no key to decrypt data source secrets with (strand server --datasource-key-file)", api.ErrFailedPrecondition)
	}
	block, err := aes.NewCipher(c.opts.Key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize() {
		return nil, errors.New("the stored secret is too short")
	}
	plain, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], []byte("strand data source"))
	if err != nil {
		return nil, fmt.Errorf("%w: the data source's secret does not decrypt with this server's key (is every node given the same --datasource-key-file?)", api.ErrFailedPrecondition)
	}
	return plain, nil
}

func (c *Centre) dataSource(ctx context.Context, name string) (storedDataSource, int64, error) {
	rec, err := c.st.GetRecord(ctx, kindDataSource, name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidArgument) { // (a name no record can have)
		return storedDataSource{}, 0, fmt.Errorf("%w: no data source %q", api.ErrNotFound, name)
	}
	if err != nil {
		return storedDataSource{}, 0, fmt.Errorf("resources: read data source %s: %w", name, err)
	}
	var d storedDataSource
	if err := json.Unmarshal(rec.Value, &d); err != nil {
		return storedDataSource{}, 0, fmt.Errorf("resources: data source %s: %w", name, err)
	}
	return d, rec.Version, nil
}

// PutDataSource creates a data source (update false) or changes one the
// caller owns: it checks that it answers unless the spec skips the check,
// and stores nothing when it does not.
func (c *Centre) PutDataSource(ctx context.Context, s DataSourceSpec, update bool) (DataSource, error) {
	id := caller(ctx)
	display, full, err := normalize(s)
	if err != nil {
		return DataSource{}, err
	}
	prev, rv, err := c.dataSource(ctx, s.Name)
	switch {
	case err == nil && !update:
		return DataSource{}, fmt.Errorf("%w: data source %s exists (strand datasource update changes it)", api.ErrAlreadyExists, s.Name)
	case errors.Is(err, api.ErrNotFound) && update:
		return DataSource{}, err
	case err != nil && !errors.Is(err, api.ErrNotFound):
		return DataSource{}, err
	case update && !prev.MayManage(id):
		return DataSource{}, denied(id, "change data source "+s.Name+" (its owner is "+prev.Owner+")")
	}
	if update && s.Password == "" && prev.HasPassword && strings.Contains(full, "@") {
		// Keep the password when only the rest changes.
		if old, err := c.open(prev.Secret); err == nil {
			if ou, err := url.Parse(string(old)); err == nil {
				if pw, ok := ou.User.Password(); ok {
					s.Password = pw
					display, full, _ = normalize(s)
				}
			}
		}
	}
	secret, err := c.seal([]byte(full))
	if err != nil {
		return DataSource{}, err
	}
	conn := Connection{Name: s.Name, Type: s.Type, URL: full}
	if !s.SkipCheck {
		if err := c.opts.Check(ctx, conn); err != nil {
			return DataSource{}, fmt.Errorf("%w: data source %s does not answer: %s (nothing was stored; --skip-check stores a data source only the workers reach)",
				api.ErrFailedPrecondition, s.Name, strings.ReplaceAll(err.Error(), full, display))
		}
	}
	now := time.Now().UTC()
	d := storedDataSource{DataSource: DataSource{Name: s.Name, Type: s.Type, URL: display, Description: s.Description,
		HasPassword: display != full, Owned: Owned{Owner: id.Name}, CreatedAt: now, ModifiedAt: now, ModifiedBy: id.Name}, Secret: secret}
	if update {
		d.Owned, d.CreatedAt = prev.Owned, prev.CreatedAt
	}
	if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindDataSource, Key: s.Name, Value: mustJSON(d), Version: rv}); err != nil {
		if errors.Is(err, store.ErrConditionFailed) && !update {
			return DataSource{}, fmt.Errorf("%w: data source %s exists", api.ErrAlreadyExists, s.Name)
		}
		return DataSource{}, fmt.Errorf("resources: store data source %s: %w", s.Name, conflict(err))
	}
	return d.DataSource, nil
}

// DataSources lists the data sources the caller may use, by name.
func (c *Centre) DataSources(ctx context.Context) ([]DataSource, error) {
	id := caller(ctx)
	recs, err := c.st.ListRecords(ctx, kindDataSource, "")
	if err != nil {
		return nil, fmt.Errorf("resources: list data sources: %w", err)
	}
	out := []DataSource{}
	for _, rec := range recs {
		var d storedDataSource
		if err := json.Unmarshal(rec.Value, &d); err != nil {
			return nil, fmt.Errorf("resources: data source %s: %w", rec.Key, err)
		}
		if d.MayUse(id) || mayReadAll(id) {
			out = append(out, d.DataSource)
		}
	}
	return out, nil
}

// DataSource describes a data source the caller may use.
func (c *Centre) DataSource(ctx context.Context, name string) (DataSource, error) {
	id := caller(ctx)
	d, _, err := c.dataSource(ctx, name)
	if err != nil {
		return DataSource{}, err
	}
	if !d.MayUse(id) && !mayReadAll(id) {
		return DataSource{}, denied(id, "use data source "+name)
	}
	return d.DataSource, nil
}

// Test checks that a data source the caller may use answers.
func (c *Centre) Test(ctx context.Context, name string) error {
	conn, err := c.connection(ctx, name)
	if err != nil {
		return err
	}
	if err := c.opts.Check(ctx, conn); err != nil {
		d, _, _ := c.dataSource(ctx, name)
		return fmt.Errorf("%w: data source %s does not answer: %s", api.ErrFailedPrecondition, name, strings.ReplaceAll(err.Error(), conn.URL, d.URL))
	}
	return nil
}

func (c *Centre) connection(ctx context.Context, name string) (Connection, error) {
	id := caller(ctx)
	d, _, err := c.dataSource(ctx, name)
	if err != nil {
		return Connection{}, err
	}
	if !d.MayUse(id) && !mayReadAll(id) {
		return Connection{}, denied(id, "use data source "+name)
	}
	full, err := c.open(d.Secret)
	if err != nil {
		return Connection{}, err
	}
	return Connection{Name: d.Name, Type: d.Type, URL: string(full)}, nil
}

// Connect returns a data source with its password, for a worker to open:
// only cluster admins and workers (service accounts holding the worker
// role in a namespace) may ask.
func (c *Centre) Connect(ctx context.Context, name string) (Connection, error) {
	id := caller(ctx)
	if !mayReadAll(id) {
		return Connection{}, denied(id, "read the secret of data source "+name+" (a worker's service account or a cluster admin may)")
	}
	return c.connection(ctx, name)
}

// DeleteDataSource deletes a data source the caller owns.
func (c *Centre) DeleteDataSource(ctx context.Context, name string) error {
	id := caller(ctx)
	d, _, err := c.dataSource(ctx, name)
	if err != nil {
		return err
	}
	if !d.MayManage(id) {
		return denied(id, "delete data source "+name+" (its owner is "+d.Owner+")")
	}
	if err := c.st.DeleteRecord(ctx, kindDataSource, name, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("resources: delete data source %s: %w", name, err)
	}
	return nil
}

// GrantDataSource lets user use a data source (revoke: no longer).
func (c *Centre) GrantDataSource(ctx context.Context, name, user string, revoke bool) (DataSource, error) {
	id := caller(ctx)
	if err := checkUser(user); err != nil {
		return DataSource{}, err
	}
	d, rv, err := c.dataSource(ctx, name)
	if err != nil {
		return DataSource{}, err
	}
	if !d.MayManage(id) {
		return DataSource{}, denied(id, "grant data source "+name+" (its owner is "+d.Owner+")")
	}
	d.Users = grant(d.Users, user, revoke)
	if _, err := c.st.PutRecord(ctx, store.Record{Kind: kindDataSource, Key: name, Value: mustJSON(d), Version: rv}); err != nil {
		return DataSource{}, fmt.Errorf("resources: store data source %s: %w", name, conflict(err))
	}
	return d.DataSource, nil
}
