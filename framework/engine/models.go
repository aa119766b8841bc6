package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/flowrun/flowrun/framework/batch"
	"github.com/flowrun/flowrun/framework/config"
	"github.com/flowrun/flowrun/framework/graph"
	"github.com/flowrun/flowrun/framework/pluginhost"
	"github.com/flowrun/flowrun/framework/resources"
	"github.com/flowrun/flowrun/framework/results"
	"github.com/flowrun/flowrun/framework/stage"
	"github.com/flowrun/flowrun/sdk/model"
	"github.com/flowrun/flowrun/sdk/plugin"
)

// A graph may rank with several models (RecPipe: a light frontend
// filtering for a heavy backend), named under models:, each with host
// tables of its own at its own dim. The graph's model (model:,
// dataset.dim, the run's tables) is the one every stage uses unless its
// config names another, so a graph without models: runs exactly as before
// (same tables, same digest).

// ModelUser is implemented by a decoded stage Config that may rank with
// one of the graph's named models: ModelName is its name under models:,
// "" for the graph's own model. The runtime hands such a stage that
// model and its tables as Settings.Model and Settings.Tables.
type ModelUser interface {
	ModelName() string
}

// namedModel is a named model of a run: its plugin, configured, and its
// host tables.
type namedModel struct {
	name   string
	model  model.Model
	tables *batch.Tables
}

// ModelSeed is the seed of named model name's tables and dense weights:
// a hash of the graph's seed and the name, so that two models' initial
// rows are independent draws (with the graph's seed alone, RMsmall's 4
// values would be the first 4 of RMlarge's 32), and a model's values
// depend only on the graph's seed and its name, whatever other models the
// graph holds.
func ModelSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return batch.SplitMix64(seed ^ h.Sum64())
}

// modelSetup is the Setup of named model m: the run's, with the model's
// dim on every table and its own seed.
func (s *Shape) modelSetup(runID, name string, m config.NamedModel) (plugin.Setup, error) {
	setup, err := s.Setup(runID, m.Options)
	if err != nil {
		return setup, err
	}
	for i := range setup.Tables {
		setup.Tables[i].Dim = m.Dim
	}
	setup.Seed = ModelSeed(s.Config.Seed, name)
	return setup, nil
}

// newModelTables creates named model m's host tables: the dataset's
// tables and rows at the model's dim, rows as wide as the embedding
// optimizer makes them.
func (s *Shape) newModelTables(name string, m config.NamedModel) (*batch.Tables, error) {
	_, stride, err := batch.RowStride(s.Config.Embedding, m.Dim)
	if err != nil {
		return nil, err
	}
	return batch.NewTablesRows(ModelSeed(s.Config.Seed, name), s.Config.Dataset.AllRows(), m.Dim, stride)
}

func modelPath(name string, key ...string) string {
	return strings.Join(append([]string{"models", name}, key...), config.KeyDelimiter)
}

// buildModels opens and configures every named model and creates its
// tables, in name order.
func (r *run) buildModels(ctx context.Context) error {
	if err := r.checkSaveModel(ctx); err != nil { // models_checkpoint.go
		return err
	}
	cfg := r.opts.Graph.Config
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		mc := cfg.Models[name]
		m, err := r.opts.Plugins.Model(ctx, mc.Plugin)
		if err != nil {
			return config.At(modelPath(name, "plugin"), err)
		}
		setup, err := r.shape.modelSetup(r.id, name, mc)
		if err == nil {
			err = m.Configure(ctx, setup)
		}
		if err != nil {
			ref := pluginRef{kind: plugin.KindModel, section: modelPath(name), ref: mc.Plugin, options: mc.Options}
			return ref.optionErrors(fmt.Errorf("configure: %w", err))
		}
		info, err := m.Info(ctx)
		if err != nil {
			return fmt.Errorf("models %s: info: %w", name, err)
		}
		tables, err := r.shape.modelTables(ctx, name, mc, m) // models_checkpoint.go
		if err != nil {
			return err
		}
		r.models = append(r.models, &namedModel{name: name, model: m, tables: tables})
		ref, _ := pluginhost.ParseRef(mc.Plugin) // the host has resolved it
		r.uses = append(r.uses, results.PluginUse{Kind: string(plugin.KindModel), Role: "models." + name,
			Ref: mc.Plugin, Name: info.Name, Remote: !ref.Builtin})
	}
	return nil
}

// modelSettings hands a stage that names a model (ModelUser) that model
// and its tables.
func (r *run) modelSettings(gn graph.Node, set stage.Settings) (stage.Settings, error) {
	name := modelNameOf(gn)
	if name == "" {
		return set, nil
	}
	for _, m := range r.models {
		if m.name == name {
			set.Plugins.Model, set.Tables = m.model, m.tables
			return set, nil
		}
	}
	return set, unknownModel(r.opts.Graph.Config, gn.Name, name)
}

func modelNameOf(gn graph.Node) string {
	if u, ok := gn.Options.(ModelUser); ok {
		return u.ModelName()
	}
	return ""
}

// unknownModel is the error for stage naming a model the graph lacks.
func unknownModel(cfg *config.Config, stageName, name string) error {
	have := slices.Sorted(maps.Keys(cfg.Models))
	msg := "the graph has no models: section"
	if len(have) > 0 {
		msg = "models: " + strings.Join(have, ", ")
	}
	return config.At("stages"+config.KeyDelimiter+stageName+config.KeyDelimiter+"model",
		fmt.Errorf("%q is not a model of the graph (%s)", name, msg))
}

// checkModels checks every stage's model against the graph's models and
// the built-in named models' options (with the Setups a run gives them),
// for Validate.
func checkModels(ctx context.Context, g *graph.Graph, shape *Shape, runID string, checker SetupChecker) error {
	var errs []error
	for _, gn := range g.Nodes {
		if name := modelNameOf(gn); name != "" {
			if _, ok := g.Config.Models[name]; !ok {
				errs = append(errs, unknownModel(g.Config, gn.Name, name))
			}
		}
	}
	if checker == nil {
		return errors.Join(errs...)
	}
	for _, name := range slices.Sorted(maps.Keys(g.Config.Models)) {
		mc := g.Config.Models[name]
		setup, err := shape.modelSetup(runID, name, mc)
		if err == nil {
			err = checker.CheckSetup(ctx, plugin.KindModel, mc.Plugin, setup)
		}
		ref := pluginRef{kind: plugin.KindModel, section: modelPath(name), ref: mc.Plugin, options: mc.Options}
		errs = append(errs, ref.optionErrors(err))
	}
	return errors.Join(errs...)
}

// modelsDigest extends the digest of the graph's model (base) with every
// named model, in name order: its name, its tables' touched rows (Hash)
// and its dense digest. Without named models it is base itself.
func (r *run) modelsDigest(ctx context.Context, base string) (string, error) {
	if len(r.models) == 0 {
		return base, nil
	}
	h := sha256.New()
	h.Write([]byte(base))
	for _, m := range r.models {
		h.Write([]byte(m.name))
		m.tables.Hash(h)
		dense, err := m.model.Digest(ctx)
		if err != nil {
			return "", fmt.Errorf("models %s: digest: %w", m.name, err)
		}
		h.Write(dense)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// modelNeeds is what the named models' tables can take (Needs): the rows
// the run's batches can touch, at each model's row width, and the rest
// mapped. A model's rows are touched only by the stages that rank with
// it, so this is a bound.
func modelNeeds(cfg *config.Config, rows []int64, touched int64) []resources.Item {
	var need []resources.Item
	for _, name := range slices.Sorted(maps.Keys(cfg.Models)) {
		_, stride, err := batch.RowStride(cfg.Embedding, cfg.Models[name].Dim)
		if err != nil {
			continue // config.Validate reports the optimizer
		}
		t := batch.TablesTouchedBytes(rows, touched, stride)
		need = append(need,
			resources.Item{Key: modelPath(name, "dim"), Shared: true, Bytes: t,
				What: fmt.Sprintf("model %s's tables' touched rows (%d tables × at most min(rows, %d) rows × %d B)", name, len(rows), touched, stride*4)},
			resources.Item{Key: modelPath(name, "dim"), What: fmt.Sprintf("model %s's tables' untouched rows and bitmaps (mapped)", name),
				Virtual: batch.TablesVirtualBytes(rows, stride) - t + batch.TablesBitmapBytes(rows)})
	}
	return need
}

// closeModels removes the named models' tables.
func (r *run) closeModels() {
	for _, m := range r.models {
		if err := m.tables.Close(); err != nil {
			r.log.Warn("close tables", "model", m.name, "err", err)
		}
	}
}
