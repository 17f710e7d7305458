package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// layerFile is one file of the image's single layer: its contents come from a file on this machine.
type layerFile struct {
	dest string
	src  string
	mode int64
}

// build parses `OUT REF ENTRYPOINT... -- DEST=SRC[:MODE]...` and writes the image.
func build(args []string) error {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 3 {
		return fmt.Errorf("usage: build OUT.tar REF ENTRYPOINT... -- DEST=SRC[:MODE]...")
	}
	out, ref, entrypoint := args[0], args[1], args[2:sep]
	var files []layerFile
	for _, spec := range args[sep+1:] {
		dest, rest, ok := strings.Cut(spec, "=")
		if !ok || !path.IsAbs(dest) {
			return fmt.Errorf("file %q: want /DEST=SRC[:MODE]", spec)
		}
		f := layerFile{dest: dest, src: rest, mode: 0o644}
		if src, m, ok := strings.Cut(rest, ":"); ok {
			mode, err := strconv.ParseInt(m, 8, 64)
			if err != nil {
				return fmt.Errorf("file %q: mode %q is not octal", spec, m)
			}
			f.src, f.mode = src, mode
		}
		files = append(files, f)
	}
	tag, err := name.NewTag(ref, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	layerTar, err := tarOf(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: entrypoint, Env: []string{"PATH=/"}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

// tarOf makes the layer: parent directories first, files with fixed owner and time so equal inputs make equal
// layers.
func tarOf(files []layerFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	sort.Slice(files, func(i, j int) bool { return files[i].dest < files[j].dest })
	for _, f := range files {
		var parents []string
		for d := path.Dir(f.dest); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", f.dest, err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.dest[1:], Mode: f.mode, Size: int64(len(data))}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
