package updater

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// archiveFormat is how a source packs its database.
type archiveFormat int

const (
	formatZip   archiveFormat = iota // IP2Location: a zip with the .BIN or .MMDB and licence texts
	formatTarGz                      // MaxMind: a tar.gz with EDITION_DATE/EDITION.mmdb and licence texts
	formatGz                         // DB-IP: one gzipped .mmdb
)

func (f archiveFormat) String() string {
	return [...]string{"zip", "tar.gz", "gzip file"}[f]
}

// magic is how each format's file begins; anything else is the service's text answer.
func (f archiveFormat) magic() []byte {
	if f == formatZip {
		return []byte("PK")
	}
	return []byte{0x1f, 0x8b}
}

// serviceMessage reports the text a service sends instead of the archive (IP2Location
// answers "NO PERMISSION" with status 200 for a bad token, an unknown product or too many
// downloads).
func serviceMessage(path string, f archiveFormat) (string, bool) {
	file, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer file.Close()
	buf := make([]byte, 200)
	n, _ := io.ReadFull(file, buf)
	buf = buf[:n]
	if bytes.HasPrefix(buf, f.magic()) {
		return "", false
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(buf), "?")), true
}

// unpack extracts the database from the archive beside the target, bounded by MaxBytes,
// synced to disk, and returns its path (a temporary name keeping the database's
// extension: the installer opens files by it). A truncated or damaged archive is an error
// even when the database came out of it whole: gzip's checksum is read to the end.
func (u *Updater) unpack(archive, dir, edition string, f archiveFormat) (string, error) {
	var (
		out string
		err error
	)
	switch f {
	case formatZip:
		out, err = u.unpackZip(archive, dir)
	case formatTarGz:
		out, err = u.unpackTarGz(archive, dir)
	default:
		out, err = u.unpackGz(archive, dir)
	}
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", edition, err)
	}
	return out, nil
}

// unpackZip extracts the .BIN or .MMDB (the largest if several).
func (u *Updater) unpackZip(archive, dir string) (string, error) {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	var best *zip.File
	for _, f := range zr.File {
		ext := strings.ToLower(filepath.Ext(f.Name))
		if (ext == ".bin" || ext == ".mmdb") && (best == nil || f.UncompressedSize64 > best.UncompressedSize64) {
			best = f
		}
	}
	if best == nil {
		return "", errors.New("no .BIN or .MMDB file in the archive")
	}
	if best.UncompressedSize64 > uint64(u.cfg.MaxBytes) {
		return "", fmt.Errorf("%s is larger than %d bytes", best.Name, u.cfg.MaxBytes)
	}
	rc, err := best.Open()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	return u.extract(rc, dir, strings.ToLower(filepath.Ext(best.Name)), nil)
}

// unpackTarGz extracts the one .mmdb file of a MaxMind archive.
func (u *Updater) unpackTarGz(archive, dir string) (string, error) {
	file, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer file.Close()
	gz, err := gzip.NewReader(file)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", errors.New("no .mmdb file in the archive")
		}
		if err != nil {
			return "", err
		}
		if h.Typeflag != tar.TypeReg || !strings.EqualFold(filepath.Ext(h.Name), ".mmdb") {
			continue
		}
		if h.Size > u.cfg.MaxBytes {
			return "", fmt.Errorf("%s is larger than %d bytes", h.Name, u.cfg.MaxBytes)
		}
		// The rest of the archive is read before the file is kept: a truncated archive
		// is refused even when the database came out whole.
		return u.extract(tr, dir, ".mmdb", func() error {
			for {
				if _, err := tr.Next(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					return err
				}
			}
			_, err := io.Copy(io.Discard, io.LimitReader(gz, u.cfg.MaxBytes)) // to gzip's checksum
			return err
		})
	}
}

// unpackGz extracts a gzipped .mmdb; the reader checks gzip's length and CRC at the end.
func (u *Updater) unpackGz(archive, dir string) (string, error) {
	file, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer file.Close()
	gz, err := gzip.NewReader(file)
	if err != nil {
		return "", err
	}
	return u.extract(gz, dir, ".mmdb", nil)
}

// extract copies r into a temporary file named with ext, then runs rest (the archive's
// remainder, read to its end) and syncs the file.
func (u *Updater) extract(r io.Reader, dir, ext string, rest func() error) (string, error) {
	out, err := os.CreateTemp(dir, ".geoip-update-*"+ext)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(out, io.LimitReader(r, u.cfg.MaxBytes+1))
	if err == nil && n > u.cfg.MaxBytes {
		err = fmt.Errorf("the database is larger than %d bytes", u.cfg.MaxBytes)
	}
	if err == nil && rest != nil {
		err = rest()
	}
	if err == nil {
		// On disk before the installer renames it over the serving file: renamed
		// first, a crash could leave the target name on a file without its data.
		err = u.syncFile(out)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(out.Name(), 0o644)
	}
	if err != nil {
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), nil
}
