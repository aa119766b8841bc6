package engine

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/bus"
	"github.com/flowrun/flowrun/framework/checkpoint"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/framework/stages/load"
	"github.com/flowrun/flowrun/framework/stages/train"
	"github.com/flowrun/flowrun/plugins/caches/none"
	"github.com/flowrun/flowrun/plugins/devices/cpudram"
	"github.com/flowrun/flowrun/plugins/devices/hbm"
	"github.com/flowrun/flowrun/plugins/kernels/cpu"
	"github.com/flowrun/flowrun/plugins/models/dlrm"
	"github.com/flowrun/flowrun/sdk/cache"
	"github.com/flowrun/flowrun/sdk/device"
	"github.com/flowrun/flowrun/sdk/kernel"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/region/regiontest"
)

// trainGraph trains RMsmall (dim 4) on a small Zipf dataset, with the
// real load and train stages and the built-in dlrm, in process.
const trainGraph = `name: model-ckpt-test
seed: 3
dataset:
  kind: synthetic
  batches: 12
  batch_size: 64
  tables: 3
  rows: 5000
  dim: 4
  lookups: 2
  locality: zipf
  zipf_s: 1.05
  dense_features: 13
  eval_batches: 0
model:
  plugin: builtin:dlrm
  options: {preset: rmsmall, optimizer: sgd, learning_rate: 0.2}
kernel: {plugin: builtin:cpu}
devices: {host: {plugin: builtin:cpu-dram}}
cache: {plugin: builtin:none}
stages:
  load: {kind: load, out: [batches]}
  train: {kind: train, in: batches, learning_rate: 10, reduce: sum, host_device: host, compute_device: host}
tracing: {exporter: none}
nats: {credits: 2}
`

// keepModels is the plugin host, remembering the models it opened: the
// trained model stays in memory after its run.
type keepModels struct {
	*pluginhost.Host
	mu     sync.Mutex
	models []model.Model
}

func (k *keepModels) Model(ctx context.Context, ref string) (model.Model, error) {
	m, err := k.Host.Model(ctx, ref)
	k.mu.Lock()
	k.models = append(k.models, m)
	k.mu.Unlock()
	return m, err
}

func dlrmHost(t *testing.T) *keepModels {
	t.Helper()
	h, err := pluginhost.New(pluginhost.Settings{Builtins: pluginhost.Builtins{
		Caches:  map[string]func() cache.Cache{"none": none.New},
		Kernels: map[string]func() kernel.Kernel{"cpu": cpu.New},
		Models:  map[string]func() model.Model{"dlrm": dlrm.New},
		Devices: map[string]func() device.Device{"cpu-dram": cpudram.New, "hbm": hbm.New},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &keepModels{Host: h}
}

// trainAndSave runs trainGraph with SaveModel and returns its config,
// the trained model (still in memory), the run's digest and the model
// checkpoint's root.
func trainAndSave(t *testing.T) (*config.Config, model.Model, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "train.yaml")
	if err := os.WriteFile(path, []byte(trainGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, src, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := stage.NewRegistry(load.NewFactory(), train.NewFactory())
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(cfg, src, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartEmbedded(bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	conn, err := bus.Connect(srv.ClientURL(), srv.Auth())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	host := dlrmHost(t)
	dir := filepath.Join(t.TempDir(), "model")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Options{Graph: g, Stages: reg, Plugins: host, Bus: conn,
		Checkpoint: CheckpointOptions{SaveModel: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(host.models) != 1 {
		t.Fatalf("the run opened %d models", len(host.models))
	}
	return cfg, host.models[0], res.Digest, dir
}

// servingModel is the trained model as an inference graph names it.
func servingModel(cfg *config.Config, dir string) config.NamedModel {
	return config.NamedModel{Plugin: cfg.Model.Plugin, Options: cfg.Model.Options, Dim: cfg.Dataset.Dim, Checkpoint: dir}
}

// loadNamed configures a fresh dlrm as named model m of an inference
// run of cfg and loads its tables (and, from m.Checkpoint, its state).
func loadNamed(t *testing.T, cfg *config.Config, m config.NamedModel) (model.Model, *batch.Tables, error) {
	t.Helper()
	shape, err := NewShape(&graph.Graph{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	mod := dlrm.New()
	setup, err := shape.modelSetup("serve", "large", m)
	if err == nil {
		err = mod.Configure(context.Background(), setup)
	}
	if err != nil {
		t.Fatal(err)
	}
	tables, err := shape.modelTables(context.Background(), "large", m, mod)
	if tables != nil {
		t.Cleanup(func() { tables.Close() })
	}
	return mod, tables, err
}

// scores runs m forward over a batch of random pooled embeddings and
// dense features.
func scores(t *testing.T, m model.Model, a *regiontest.Arena, tables, dim, dense, n int) []float32 {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	pooled := make([]float32, tables*n*dim)
	for i := range pooled {
		pooled[i] = float32(rng.NormFloat64())
	}
	dn := make([]float32, n*dense)
	for i := range dn {
		dn[i] = float32(rng.NormFloat64())
	}
	req := &model.StepRequest{Batch: n, Pooled: a.Float32s(pooled), Dense: a.Float32s(dn),
		Labels: a.Float32s(make([]float32, n)), Scores: a.Alloc(4 * int64(n))}
	if _, err := m.Step(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return a.ReadFloat32s(req.Scores)
}

// TestModelCheckpointScoresBitIdentically: a model saved at the end of a
// training run and loaded into a named model of an inference run has the
// run's digest (touched rows with their optimizer state, and the dense
// digest) and scores every input with the same bits as the trained model
// still in memory; an untrained model of the same shape does not.
func TestModelCheckpointScoresBitIdentically(t *testing.T) {
	cfg, trained, digest, dir := trainAndSave(t)
	loaded, tables, err := loadNamed(t, cfg, servingModel(cfg, dir))
	if err != nil {
		t.Fatal(err)
	}
	dense, err := loaded.Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tables.Digest(dense); got != digest {
		t.Fatalf("loaded model's digest %.12s, the training run's %.12s", got, digest)
	}
	fresh, _, err := loadNamed(t, cfg, servingModel(cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	a := regiontest.New(t, 1<<20)
	d := cfg.Dataset
	want := scores(t, trained, a, d.Tables, d.Dim, d.DenseFeatures, 256)
	got := scores(t, loaded, a, d.Tables, d.Dim, d.DenseFeatures, 256)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("sample %d: loaded model scores %v, the trained one in memory %v", i, got[i], want[i])
		}
	}
	same := true
	for i, s := range scores(t, fresh, a, d.Tables, d.Dim, d.DenseFeatures, 256) {
		same = same && math.Float32bits(s) == math.Float32bits(want[i])
	}
	if same {
		t.Fatal("an untrained model scores like the trained one: the comparison cannot fail")
	}
	// Rows the training never touched are the training run's initial ones.
	init, err := batch.NewTablesRows(cfg.Seed, cfg.Dataset.AllRows(), d.Dim, tables.Stride)
	if err != nil {
		t.Fatal(err)
	}
	defer init.Close()
	touched := map[int64]bool{}
	for _, id := range tables.TouchedIDs(0) {
		touched[id] = true
	}
	for id := int64(0); id < 200; id++ {
		if !touched[id] && string(init.RowData(0, id)) != string(tables.RowData(0, id)) {
			t.Fatalf("untouched row %d of table 0 is not the training run's initial row", id)
		}
	}
}

// TestModelCheckpointRefused: a corrupt checkpoint, one of another
// shape or optimizer, a resume checkpoint and one whose model does not
// have the recorded digest are refused, at the key, and nothing loads.
func TestModelCheckpointRefused(t *testing.T) {
	cfg, _, _, dir := trainAndSave(t)
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	copyCheckpoint(t, ck, corrupt, nil)
	b, _ := os.ReadFile(filepath.Join(corrupt, checkpoint.Name(ck.Batch), partModel))
	b[len(b)/2] ^= 1
	if err := os.WriteFile(filepath.Join(corrupt, checkpoint.Name(ck.Batch), partModel), b, 0o644); err != nil {
		t.Fatal(err)
	}
	badDigest := filepath.Join(t.TempDir(), "digest")
	copyCheckpoint(t, ck, badDigest, func(n map[string]string) { n[noteDigest] = strings.Repeat("0", 64) })
	notModel := filepath.Join(t.TempDir(), "resume")
	copyCheckpoint(t, ck, notModel, func(n map[string]string) { delete(n, noteKind) })

	sgd := servingModel(cfg, dir)
	adagrad := sgd
	adagrad.Options = map[string]any{"preset": "rmsmall", "optimizer": "adagrad"}
	with := func(m config.NamedModel, ckpt string) config.NamedModel { m.Checkpoint = ckpt; return m }
	cases := map[string]struct {
		m    config.NamedModel
		want error
		says string
	}{
		"corrupt":           {with(sgd, corrupt), checkpoint.ErrCorrupt, "SHA-256"},
		"wrong digest":      {with(sgd, badDigest), checkpoint.ErrMismatch, "digest"},
		"not a model":       {with(sgd, notModel), checkpoint.ErrMismatch, "not a model checkpoint"},
		"another optimizer": {adagrad, checkpoint.ErrMismatch, "dense state"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, tables, err := loadNamed(t, cfg, tc.m)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) ||
				!strings.Contains(err.Error(), modelPath("large", "checkpoint")) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line at %s wrapping %v saying %q", err, modelPath("large", "checkpoint"), tc.want, tc.says)
			}
			if tables != nil {
				t.Fatal("tables loaded from a refused checkpoint")
			}
		})
	}
	// Another dim: the config of a dim-8 model of the same dataset.
	wide := *cfg
	wide.Dataset.Dim = 8
	m := with(sgd, dir)
	m.Dim, m.Options = 8, map[string]any{"preset": "rmsmall", "optimizer": "sgd", "bottom_mlp": []any{64, 8}}
	if _, _, err := loadNamed(t, &wide, m); !errors.Is(err, checkpoint.ErrMismatch) || !strings.Contains(err.Error(), "dim") {
		t.Fatalf("another dim: err = %v", err)
	}
}

// copyCheckpoint writes ck again under root, its notes edited by edit
// (a whole checkpoint: its checksums are of what it holds).
func copyCheckpoint(t *testing.T, ck *checkpoint.Checkpoint, root string, edit func(map[string]string)) {
	t.Helper()
	m := ck.Manifest
	m.Notes = map[string]string{}
	for k, v := range ck.Notes {
		m.Notes[k] = v
	}
	if edit != nil {
		edit(m.Notes)
	}
	var parts []checkpoint.Part
	for _, f := range ck.Files {
		b, _ := ck.Part(f.Name)
		parts = append(parts, checkpoint.Part{Name: f.Name, Write: writeBytes(b)})
	}
	if _, err := checkpoint.Write(root, m, parts); err != nil {
		t.Fatal(err)
	}
}
