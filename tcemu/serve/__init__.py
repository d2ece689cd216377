"""`tcemu serve`: a local page that draws descriptors, swizzles, TMA boxes, instruction descriptors, tensor memory,
bank conflicts and PTX runs, computed by tcemu's own models.

    tcemu serve [--port P]        # prints http://127.0.0.1:P/ ; the page loads nothing from the internet

Every view is driven by form fields and its state lives in the page's query string (?view=descriptor&...),
so a URL reproduces it. `tcemu explain ... --html map.html` writes the descriptor view as one self-contained file.

JSON API
--------
GET /api/<view>?field=value&...   or   POST /api/<view> with a JSON object of fields (values: strings, numbers,
booleans). Integers may be written in any Python base ("0x400"); lists as "64x64" or "0x400, 16". A field the
view does not take is refused. Answers:
  200  the view's data (below)
  400  {"error": {"type", "field", "rule", "message"}}: `field` names the request field at fault (or, for a rule
       of the model, the model's parameter, e.g. "start_address, lbo, sbo"); never a traceback
  403  a Host header other than 127.0.0.1 / localhost;  404 unknown view or path;  413 a body over 256 KiB
  500  {"error": ...} for a bug in tcemu (no traceback; the server's stderr has one line)

descriptor  fields: arch (sm90 | sm100 | sm103), input (hex | fields), descriptor (hex), or start_address, lbo, sbo,
            base_offset, swizzle (none 32B 64B 128B 128B_base32B), version, lbo_mode (sm100); dtype, major (K | MN),
            rows, k (default: one instruction's K); sm100: instr + kind (+ operand a | b) take type, major-ness and
            extent from a tcgen05 instruction descriptor; sparse (+ operand): sm90 wgmma.mma_async.sp.
            returns: descriptor (hex), fields, summary, dtype, element_bits, per_chunk, major, rows, k, operand,
            explain (the text of `tcemu explain`), findings [{severity, field, rule}], layout, addresses
            (rows x k: tcemu.operand_addresses), core_matrix_rows (tcemu.core_matrix_rows), map_error (why there
            is no map, with the lints still given), command (the equivalent `tcemu explain` line);
            with element=i,k: element {i, k, address, bank, chunk, line, core_matrix, core_matrix_row}.
swizzle     fields: mode, base_offset.  returns: swizzle (Swizzle<B,M,S>), row_bytes, rows, chunks, placed[r][c]
            (physical 16-byte chunk of logical chunk c of row r), grid[r][p] (logical chunk at physical p), text.
tma         fields: arch, dtype (tf32 f16 bf16 e4m3 e5m2 s8 u8), dims, box, coords, element_strides (dimension 0
            first), swizzle, smem_addr, major, k, kblock.  returns: counts, addresses (box rows x dimension 0:
            the shared address of each box element, tcemu.layout.tma.plan_tile), global_index (flat index into the
            tensor, -1 out of bounds: zero filled), out_of_bounds; the operand the box holds (K-major: box rows x
            dimension 0; MN-major: transposed), K block kblock of k elements: descriptor / descriptor_fields /
            summary from tcemu.check.suggest_descriptor, or suggest_error.
instr       fields: instr (32-bit hex), kind, cta_group (1 | 2, optional: shape rules of PTX Table 39).
            returns: bits [{label, lo, width, raw, attr, value}] covering all 32 bits, read field by field
            even when the word is invalid; valid; findings [{severity, field, rule, lo (the row at fault)}];
            fields (tcemu.InstrDescriptor, null when a code is undefined), description, command.
tmem        fields: instr, kind, cta_group, d_tmem (lane << 16 | column), a_tmem, scale_a, scale_b (optional
            addresses), block_size (16 | 32, mxf4nvf4 with ue8m0).  returns: d {lanes, columns} (rows x N),
            a {lanes (per row), columns, shift (per k), bits}, scale_a / scale_b {lanes, columns (per row), bytes,
            copies (lane offsets of the four sub-partitions)}, grid (128 strings of 512 owner codes: . empty,
            D, A, a/b scale factors of A/B, s both in one cell, ! two regions on the same bytes), findings.
banks       fields: op (ld.shared.v4.b32, ldmatrix.x4.trans, ...), source (addresses | pattern | descriptor),
            addresses (32 integers), pattern (an expression in t), or descriptor + rows_expr + cols_expr +
            tile_rows + tile_k + dtype + major; mask.  returns: addresses, active, wavefronts, ideal, conflicts,
            phases [{threads, wavefronts, degree, bank_words}] (tcemu.banks.bank_conflicts), heat (32 lanes x 32
            banks: 4-byte words each thread asks of each bank), table.
ptx         fields: ptx (text, at most 192 KiB), kernel, grid, block, cluster, shared, args (whitespace-separated,
            `tcemu run --arg` syntax: numbers, null, zeros:TYPE:SHAPE, random:TYPE:SHAPE[:SEED],
            tensormap:ARG:BOX[:SWIZZLE]; no files), cta, warp, limit (traced instructions, at most 2000),
            zero_init_shared, check_layouts.  Runs only the chosen CTA's cluster, at most 1,000,000 warp
            instructions and 5 s.  returns: rows [{step, pc, line, text, lanes, ran (lane masks), control, count,
            dests [{reg, bits, type (declared), values (32 hex strings, null where the lane did not run), typed
            (as the type reads them)}], more_dests, links [{kind, view, values (fields of that view), ...}]
            (tcemu/serve/ptxlinks.py), fault (a last row: the faulting instruction)}], stopped (why the run was
            cut short), fault {type, field, rule, line, pc, cta, warp, traced} (a kernel fault: the trace shows
            the way to it), warps, stats, arrays (first 64 values of each array argument after the run).
"""
from .server import make_server, serve

__all__ = ["serve", "make_server"]
