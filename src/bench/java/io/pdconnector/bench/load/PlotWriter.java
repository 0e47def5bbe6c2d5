package io.pdconnector.bench.load;

import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.knowm.xchart.VectorGraphicsEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The run's plot with XChart: the CDF of each row's total latency (and of the raw READs, dashed),
 * and each row's requests per second over the run's time. PNG: both charts side by side in one file;
 * SVG: one file per chart.
 */
public final class PlotWriter {

    private static final int WIDTH = 1000;
    /** One color per row (its raw READ in the same color, dashed); distinguishable, cycled beyond 12 rows. */
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
            new Color(0xd62728), new Color(0x9467bd), new Color(0x8c564b), new Color(0xe377c2), new Color(0x7f7f7f),
            new Color(0xbcbd22), new Color(0x17becf), new Color(0x393b79), new Color(0xad494a)};
    private static final int HEIGHT = 600;
    private static final int MAX_POINTS = 1500;

    private PlotWriter() {
    }

    /** Writes the plot: {@code base.png}, or {@code base-cdf.svg} and {@code base-throughput.svg}. */
    public static List<Path> write(List<RowStats> rows, Path base, LoadOptions.PlotFormat format, String title)
            throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYChart cdf = cdf(rows, title);
        XYChart throughput = throughput(rows, title);
        Files.createDirectories(base.toAbsolutePath().getParent());
        List<Path> written = new ArrayList<>();
        if (format == LoadOptions.PlotFormat.SVG) {
            for (var chart : List.of(new Object[] {cdf, "-cdf"}, new Object[] {throughput, "-throughput"})) {
                Path file = Path.of(base + (String) chart[1] + ".svg");
                VectorGraphicsEncoder.saveVectorGraphic((XYChart) chart[0], file.toString(),
                        VectorGraphicsEncoder.VectorGraphicsFormat.SVG);
                written.add(file);
            }
            return written;
        }
        Path file = Path.of(base + ".png");
        writeSideBySide(cdf, throughput, file);
        written.add(file);
        return written;
    }

    /** {@code left} and {@code right} side by side in one PNG, each at the size it was built with. */
    public static void writeSideBySide(XYChart left, XYChart right, Path file) throws IOException {
        int width = left.getWidth() + right.getWidth();
        int height = Math.max(left.getHeight(), right.getHeight());
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            left.paint(g, left.getWidth(), left.getHeight());
            g.translate(left.getWidth(), 0);
            right.paint(g, right.getWidth(), right.getHeight());
        } finally {
            g.dispose();
        }
        ImageIO.write(image, "png", file.toFile());
    }

    static XYChart cdf(List<RowStats> rows, String title) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT)
                .title("Latency CDF, total per request (raw READ dashed), " + title)
                .xAxisTitle("latency (ms, log)").yAxisTitle("percentile").build();
        chart.getStyler().setXAxisLogarithmic(true);
        chart.getStyler().setYAxisMin(0.0).setYAxisMax(100.0);
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideE);
        double min = Double.MAX_VALUE;
        double max = 0;
        for (int i = 0; i < rows.size(); i++) {
            RowStats row = rows.get(i);
            Color color = COLORS[i % COLORS.length];
            Histogram total = row.histogram("total");
            add(chart, row.label + " total", total, false, color);
            if (total.getTotalCount() > 0) {
                min = Math.min(min, total.getMinValue() / 1e6);
                max = Math.max(max, total.getMaxValue() / 1e6);
            }
            if (row.raw() != null && row.raw().latency().getTotalCount() > 0) {
                add(chart, row.label + " raw READ", row.raw().latency(), true, color);
                min = Math.min(min, row.raw().latency().getMinValue() / 1e6);
                max = Math.max(max, row.raw().latency().getMaxValue() / 1e6);
            }
        }
        if (max > 0) { // whole decades, so that the log axis has labels
            chart.getStyler().setXAxisMin(Math.pow(10, Math.floor(Math.log10(min))));
            chart.getStyler().setXAxisMax(Math.pow(10, Math.ceil(Math.log10(max))));
        }
        return chart;
    }

    private static void add(XYChart chart, String name, Histogram h, boolean dashed, Color color) {
        double[][] xy = cdfPoints(h);
        if (xy[0].length == 0) {
            return;
        }
        XYSeries s = chart.addSeries(name, xy[0], xy[1]);
        s.setMarker(SeriesMarkers.NONE);
        s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        s.setLineColor(color);
        if (dashed) {
            s.setLineStyle(new java.awt.BasicStroke(1.5f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER,
                    10f, new float[] {6f, 4f}, 0f));
        }
    }

    /** (latency in ms, percent of values at or below it) at every recorded value, thinned to at most MAX_POINTS. */
    static double[][] cdfPoints(Histogram h) {
        long total = h.getTotalCount();
        List<double[]> points = new ArrayList<>();
        for (HistogramIterationValue v : h.recordedValues()) {
            points.add(new double[] {h.highestEquivalentValue(v.getValueIteratedTo()) / 1e6,
                    100.0 * v.getTotalCountToThisValue() / total});
        }
        int step = Math.max(1, (points.size() + MAX_POINTS - 1) / MAX_POINTS);
        List<double[]> kept = new ArrayList<>();
        for (int i = 0; i < points.size(); i++) {
            if (i % step == 0 || i == points.size() - 1) {
                kept.add(points.get(i));
            }
        }
        double[][] xy = new double[2][kept.size()];
        for (int i = 0; i < kept.size(); i++) {
            xy[0][i] = kept.get(i)[0];
            xy[1][i] = kept.get(i)[1];
        }
        return xy;
    }

    static XYChart throughput(List<RowStats> rows, String title) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title("Requests finished per second, " + title)
                .xAxisTitle("time since start (s)").yAxisTitle("requests/s (" + JsonResult.BUCKET_NANOS / 1_000_000
                        + " ms buckets)").build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideE);
        for (int i = 0; i < rows.size(); i++) {
            RowStats row = rows.get(i);
            long[] times = row.finishTimes();
            List<long[]> chunks = row.chunks();
            for (int k = 0; k < chunks.size(); k++) { // a series per chunk: no line across another pair's chunk
                long[] chunk = chunks.get(k);
                double[] rate = RowStats.throughput(times, chunk[0], chunk[1], JsonResult.BUCKET_NANOS);
                if (rate.length == 0) {
                    continue;
                }
                long width = Math.min(JsonResult.BUCKET_NANOS, chunk[1] - chunk[0]);
                double[] x = new double[rate.length];
                for (int b = 0; b < rate.length; b++) {
                    x[b] = (chunk[0] + (b + 0.5) * width) / 1e9;
                }
                XYSeries s = chart.addSeries(k == 0 ? row.label : row.label + " #" + (k + 1), x, rate);
                s.setMarker(SeriesMarkers.CIRCLE);
                s.setMarkerColor(COLORS[i % COLORS.length]);
                s.setLineColor(COLORS[i % COLORS.length]);
                s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
                s.setShowInLegend(k == 0);
            }
        }
        return chart;
    }
}
