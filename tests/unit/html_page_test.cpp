#include "html/html_page.hpp"

#include <gtest/gtest.h>

#include "html/charts.hpp"
#include "html/text_format.hpp"

namespace magpie::html {

TEST(HtmlPage, EscapesTextAndKeepsScriptDataInsideItsElement) {
  Page page;
  page.kind = "test";
  page.title = "a <b> & \"c\"";
  Section s{"kernels", "", {}, {}};
  s.charts.push_back(
      bar_chart("t", "", {"</script><script>alert(1)</script>"}, {{"v", {1.0}}}, "x"));
  s.tables.push_back({{"name"}, {{"<img src=x>"}}});
  page.sections.push_back(s);
  const std::string html = render_page(page);
  EXPECT_NE(html.find("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x>"), std::string::npos);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);  // "</" is \u003c/ in the JSON
  EXPECT_NE(html.find("\\u003c/script><script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(html.find("data-report-kind=\"test\""), std::string::npos);
  // The inlined library is the whole bundle.
  EXPECT_GT(chart_js_source().size(), 100000u);
  EXPECT_NE(html.find(chart_js_source().substr(0, 200)), std::string::npos);
}

TEST(HtmlCharts, EcdfEndsAtOneHundredPercentAndSkipsNonFinite) {
  auto c = ecdf_chart("t", "", {{"a", {3, 1, 2, std::nan("")}}}, "ms");
  const auto& data = c.config["data"]["datasets"][0]["data"];
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data[0]["x"], 1.0);
  EXPECT_EQ(data[2]["y"], 100.0);
}

TEST(HtmlText, ShortensInTheMiddleWithoutCuttingCharacters) {
  EXPECT_EQ(shorten("abc", 10), "abc");
  auto s = shorten("µµµµµµµµµµµµµµµµµµµµ", 9);
  EXPECT_NE(s.find("…"), std::string::npos);
  EXPECT_EQ(format_us(1500), "1.50 ms");
}

}  // namespace magpie::html
